"""How a parameter is declared: once, with everything the tools derive from it.

A group of parameters is one typed class, a subclass of `Declared` (which makes it a frozen
dataclass); each field is an annotation and a `param(...)` with its default, help text, bounds,
unit and option name:

    class Knobs(Declared):
        seed: int = param(default=1, help="Root seed of every random stream.", ge=0)
        tick: Duration = param(default=0.1, help="Allocation tick.", ge=1e-6, unit="s")

The type checker reads the class as a dataclass (`dataclass_transform`), so `knobs.tick` is a
`float` wherever it is used; at run time `Knobs.PARAMS` holds one `Param` per field, in field
order (a base class's fields first), each field's kind derived from its annotation. Everything
else — the pydantic model that validates values, the command-line options, `drfemu params`,
the result's echo, the table in `docs/parameters.md` — is derived from those `Param`s
(`schema.params`). A plug-in may also declare its parameters as a plain tuple of `Param`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, ClassVar, dataclass_transform

__all__ = ["Above", "Declared", "Duration", "Kind", "Param", "ReadBy", "param", "params_of"]


class Kind(StrEnum):
    """The value type of a parameter."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    TEXT = "text"
    DURATION = "duration"  # a text with a unit such as "100ms"; stored in seconds


class ReadBy(StrEnum):
    """Which protocols of a run read a parameter that every run declares (`schema.params.reads`)."""

    EVERY = "every"
    DISTRIBUTED = "distributed"  # those whose servers gossip (`ProtocolSpec.distributed`)
    GRADIENT = "gradient"  # those that use the gradient overlay
    WALKS = "walks"  # the home-based protocols' walks, and a central rule that declares it among its own


@dataclass(frozen=True, slots=True)
class Above:
    """The numbers above `bound`, as the values of `Param.when` under which a parameter is read:
    `("band_cap", Above(0.0))` — read only while the cap is on."""

    bound: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and value > self.bound

    def __str__(self) -> str:
        return f"above {self.bound:g}"


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter.

    `ge`, `gt`, `le` bound numbers (a duration's bounds are in seconds); `choices` lists the
    values a text may take (empty: any); `unit` is shown in help and docs; `echo` is the key
    under which the result document repeats its value (None: not repeated) — a built-in
    parameter's becomes a field of `schema.result.Echo` (written from it), a plug-in's follows
    the echo. `flag`
    overrides the option name (default `--name-with-dashes`). `read_by` says which protocols of a
    run read it, and `when` — (another parameter, its values) — that it is read only while that
    parameter takes one of those values (`("placement", ("best-fit", …))`, `("mode", ("event",))`,
    or a number above a bound: `Above`):
    declared here, so an option that would not be read is named from the declaration alone
    (`schema.params.unread`, `unread_choices`).
    """

    name: str
    kind: Kind
    default: Any
    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    echo: str | None = None
    flag: str | None = None
    read_by: ReadBy = ReadBy.EVERY
    when: tuple[str, tuple[str, ...] | Above] | None = None

    @property
    def option(self) -> str:
        """The command-line option, e.g. `--probe-d`."""
        return self.flag or "--" + self.name.replace("_", "-")

    def read_under(self, values: Mapping[str, Any]) -> bool:
        """Whether the parameter is read where the others take `values` (by name): always without
        `when`, else while its deciding parameter takes one of the listed values."""
        return self.when is None or values[self.when[0]] in self.when[1]


class _DurationMark:
    """The annotation mark of a duration (`Duration`)."""


Duration = Annotated[float, _DurationMark]
"""A duration in seconds, given as text with a unit (`"100ms"`) or as bare seconds."""


@dataclass(frozen=True, slots=True)
class _Declared:
    """What `param` records of a field until `Declared` turns it into a `Param`."""

    default: Any
    help: str
    ge: float | None
    gt: float | None
    le: float | None
    choices: tuple[str, ...]
    unit: str
    echo: str | None
    flag: str | None
    read_by: ReadBy
    when: tuple[str, tuple[str, ...] | Above] | None


def param(*, default: Any, help: str, ge: float | None = None, gt: float | None = None, le: float | None = None,
          choices: tuple[str, ...] = (), unit: str = "", echo: str | None = None, flag: str | None = None,
          read_by: ReadBy = ReadBy.EVERY, when: tuple[str, tuple[str, ...] | Above] | None = None) -> Any:
    """Declare a field of a `Declared` class (see `Param` for the arguments)."""
    return _Declared(default, help, ge, gt, le, tuple(choices), unit, echo, flag, read_by, when)


_KINDS = {int: Kind.INT, float: Kind.FLOAT, bool: Kind.BOOL, str: Kind.TEXT}


def _kind(annotation: Any) -> Kind:
    """A field's kind from its annotation: `int`, `float`, `bool`, `str` or `Duration`, optionally `| None`."""
    if typing.get_origin(annotation) is Annotated:
        base, *marks = typing.get_args(annotation)
        if _DurationMark in marks and base is float:
            return Kind.DURATION
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _kind(args[0])
    if annotation in _KINDS:
        return _KINDS[annotation]
    raise TypeError(f"a parameter is an int, float, bool, str or Duration (optionally | None), not {annotation!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(param, dataclasses.field))
class Declared:
    """Base of a group of declared parameters: a subclass is made a frozen dataclass whose
    `PARAMS` holds one `Param` per field (see the module).

    A field given by `dataclasses.field(...)` is a plain field of the class, not a parameter. A
    class may give inherited parameters defaults of its own in `DEFAULTS` (name -> default)."""

    PARAMS: ClassVar[tuple[Param, ...]] = ()
    DEFAULTS: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = typing.get_type_hints(cls, include_extras=True)
        own: list[Param] = []
        for name in cls.__dict__.get("__annotations__", {}):
            declared = cls.__dict__.get(name)
            if typing.get_origin(hints[name]) is ClassVar or isinstance(declared, dataclasses.Field):
                continue
            if not isinstance(declared, _Declared):
                raise TypeError(f"{cls.__name__}.{name}: declare it with param(default=..., help=...)")
            own.append(Param(name, _kind(hints[name]), declared.default, declared.help, declared.ge, declared.gt,
                             declared.le, declared.choices, declared.unit, declared.echo, declared.flag,
                             declared.read_by, declared.when))
            setattr(cls, name, declared.default)
        inherited = tuple(dict.fromkeys(p for base in reversed(cls.__mro__[1:]) for p in getattr(base, "PARAMS", ())))
        overrides = dict(cls.__dict__.get("DEFAULTS", {}))
        unknown = set(overrides) - {p.name for p in inherited}
        if unknown:
            raise TypeError(f"{cls.__name__}.DEFAULTS names no inherited parameter: {', '.join(sorted(unknown))}")
        for name, default in overrides.items():  # the same field, in its place, with this class's default
            cls.__annotations__[name] = hints[name]
            setattr(cls, name, default)
        cls.PARAMS = tuple(dataclasses.replace(p, default=overrides[p.name]) if p.name in overrides else p
                           for p in inherited) + tuple(own)
        dataclasses.dataclass(frozen=True)(cls)  # in place; not slotted: groups combine by multiple inheritance


def params_of(source: Any) -> tuple[Param, ...]:
    """The parameters a plug-in declares: a `Declared` class's `PARAMS`, or a tuple of `Param`."""
    declared = getattr(source, "PARAMS", source)
    return tuple(declared)
