"""Values checked against parameter declarations: a pydantic model made from the `Param`s, and
one-line errors that name the option.

Why pydantic: it validates a model built at run time from the declarations (`create_model`),
with bounds (`ge`, `gt`, `le`) and strict types, and reports every failure with its field,
which becomes our one-line error. msgspec is faster but its constraints and errors are
thinner, and validation here runs once per run, not per message.

Decisions: durations are text with a unit (`"100ms"`); a bare number in a config or in Python
is seconds, but a text without a unit (`--tick 100`) is refused. Integers and booleans are
strict (no `"3"`, no `True` for a count); a float takes an int but not a bool or a text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, create_model
from pydantic.functional_validators import BeforeValidator

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import parse_duration
from drfemu.kernel.params import Kind, Param

__all__ = ["check_values"]


class _Checked(BaseModel):
    """Base of every model generated from declarations: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, bool):
        raise InputError("expected a duration such as '100ms'")
    return value


def _no_bool(value: Any) -> Any:
    if isinstance(value, (bool, str)):
        raise InputError("expected a number")
    return value


def _annotation(p: Param) -> Any:
    bounds: dict[str, Any] = {k: v for k, v in (("ge", p.ge), ("gt", p.gt), ("le", p.le)) if v is not None}
    if p.kind is Kind.BOOL:
        return StrictBool
    if p.kind is Kind.TEXT:
        if p.choices:
            return Literal[p.choices] if p.default is not None else Literal[p.choices] | None  # type: ignore[valid-type]
        return str
    if p.kind is Kind.DURATION:
        return Annotated[float, BeforeValidator(_duration), Field(allow_inf_nan=False, **bounds)]
    if p.kind is Kind.FLOAT:
        return Annotated[float, BeforeValidator(_no_bool), Field(strict=False, allow_inf_nan=False, **bounds)]
    if p.default is None:
        return Annotated[StrictInt | None, Field(**bounds)]
    return Annotated[StrictInt, Field(**bounds)]


@cache
def _model(params: tuple[Param, ...]) -> type[_Checked]:
    """The pydantic model of `params` (made once per set of declarations)."""
    fields = {p.name: (_annotation(p), p.default) for p in params}
    return create_model("CheckedParams", __base__=_Checked, **fields)  # type: ignore[call-overload, no-any-return]


def check_values(params: Iterable[Param], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` checked against the declarations `params`: defaults filled in, durations in
    seconds, in declaration order; an `InputError` of one line naming the option otherwise."""
    declared = tuple(params)
    try:
        return _model(declared)(**values).model_dump()
    except ValidationError as error:
        raise InputError(_one_line(error, {p.name: p for p in declared})) from None


def _one_line(error: ValidationError, declared: Mapping[str, Param]) -> str:
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "?"
    if first["type"] == "extra_forbidden":
        return f"unknown run parameter {name!r} (known: {', '.join(declared)})"
    option = declared[name].option if name in declared else name
    kind, context, got = first["type"], first.get("ctx", {}), f", got {first.get('input')!r}"
    if kind == "greater_than_equal":
        return f"{option} must be at least {context['ge']:g}{got}"
    if kind == "greater_than":
        bound = "positive" if context["gt"] == 0 else f"above {context['gt']:g}"
        return f"{option} must be {bound}{got}"
    if kind == "less_than_equal":
        return f"{option} must be at most {context['le']:g}{got}"
    if kind == "literal_error":
        return f"{option} must be one of {', '.join(declared[name].choices)}{got}"
    if kind == "value_error":  # our own validators' messages name the value already
        return f"{option}: {first['msg'].removeprefix('Value error, ')}"
    expected = {"int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
                "float_type": "a finite number", "float_parsing": "a finite number", "finite_number": "a finite number",
                "string_type": "a text"}.get(kind)
    return f"{option}: {'must be ' + expected if expected else first['msg']}{got}"
