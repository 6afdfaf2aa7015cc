"""How a run parameter is declared: once, with everything the tools derive from it.

`Param` is pure data. The run-parameter schema (`schema.params`) collects the
core parameters and every registered protocol's own `PARAMS`, and derives from them the
`drfemu run` options, sweep-config validation, the typed run parameters, the reset of
parameters a protocol never reads, the result echo and the parameter table in the docs.
A protocol's own parameter is read by the protocols that declare it, and by no other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Kind", "Param"]


class Kind(StrEnum):
    """The value type of a parameter."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    TEXT = "text"
    DURATION = "duration"  # a text with a unit such as "100ms"; stored in seconds


@dataclass(frozen=True, slots=True)
class Param:
    """One run parameter.

    `ge`, `gt`, `le` bound numbers (a duration's bounds are in seconds); `choices` lists the
    values a text may take (empty: any); `unit` is shown in help and docs; `echo` is the key
    under which the result document repeats the value (None: not repeated). `flag` overrides
    the option name (default `--name-with-dashes`).
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

    @property
    def option(self) -> str:
        """The command-line option, e.g. `--probe-d`."""
        return self.flag or "--" + self.name.replace("_", "-")
