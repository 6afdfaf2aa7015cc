"""Modules written from the parameters' declarations, never by hand (issue 59): what a type
checker must see as source, so it cannot be made at import time.

- `workloads/run_keywords.py`: the keywords `drfemu.run` and `drfemu.configure` take, as a
  `TypedDict` — `mypy --strict` flags `drfemu.run(neighbours=3)` and `neighbors="3"` before the
  run does.
- `schema/result_echo.py`: the fields of the result's echo (`schema.result.Echo`), one per
  built-in parameter that declares its echo key (`Param.echo`), in declaration order.

`python -m drfemu.workloads.derived` writes both; `tests/test_declarations.py` fails when either
no longer matches the declarations. Only the built-in protocols' and workloads' parameters are in
them: a type checker reads the installed package, not the plug-ins of a user's environment, so a
plug-in's own parameter is passed through a `dict[str, Any]` (`drfemu.run(protocol="demo",
**plugin_params)`), which the checker accepts and the run checks as any other, and is echoed
after the echo (`result["key"]`). Decisions: every keyword may be None (its default); a duration
is text with a unit or a number of seconds; a parameter with choices is typed `str`, not a
`Literal`, so a value held in a variable type-checks (the run refuses a wrong one in one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

from drfemu.kernel.params import Kind, Param
from drfemu.protocols.registry import BUILT_IN as PROTOCOLS_BUILT_IN
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.params import ProtocolChoice, RunParams, run_declarations
from drfemu.workloads.points import WorkloadChoice, point_declarations
from drfemu.workloads.registry import BUILT_IN as WORKLOADS_BUILT_IN
from drfemu.workloads.registry import WORKLOADS

__all__ = ["ECHO_TARGET", "KEYWORDS_TARGET", "RESOLVED", "echo_source", "keywords_source"]

PACKAGE = Path(__file__).resolve().parent.parent
KEYWORDS_TARGET = PACKAGE / "workloads" / "run_keywords.py"
ECHO_TARGET = PACKAGE / "schema" / "result_echo.py"

EXPLICIT = frozenset(p.name for p in (*ProtocolChoice.PARAMS, *WorkloadChoice.PARAMS))
"""The choices `drfemu.run` takes as its first two arguments, so not among its keywords."""

RESOLVED = ("saturation_retry_ticks", "gradient_max_age_periods")
"""Echo keys whose value is the one the run resolved (an integer every document has: the retry in
ticks, the descriptors' expiry in periods; `schema.result.Echo.of`), not the value given."""

_KEYWORD_TYPES = {Kind.INT: "int", Kind.FLOAT: "float", Kind.BOOL: "bool", Kind.TEXT: "str",
                  Kind.DURATION: "str | float"}
_ECHO_TYPES = {Kind.INT: "int | None", Kind.FLOAT: "Number", Kind.BOOL: "bool | None", Kind.TEXT: "str | None",
               Kind.DURATION: "Number"}
_GENERATED = "Do not edit: written by `python -m drfemu.workloads.derived` from the parameters' declarations."


def _own_names() -> set[str]:
    """The parameters the package itself declares (not a plug-in's)."""
    own = {p.name for p in (*RunParams.PARAMS, *WorkloadChoice.PARAMS)}
    own |= {p.name for name in PROTOCOLS_BUILT_IN for p in PROTOCOLS[name].params}
    own |= {p.name for name in WORKLOADS_BUILT_IN for p in WORKLOADS[name].params}
    return own


def _built_in(declarations: tuple[Param, ...]) -> list[Param]:
    own = _own_names()
    return [p for p in declarations if p.name in own]


def keywords_source() -> str:
    """The text of `workloads/run_keywords.py` for the declarations as they are."""
    fields = [f"    {p.name}: {_KEYWORD_TYPES[p.kind]} | None" for p in _built_in(point_declarations())
              if p.name not in EXPLICIT]
    return "\n".join([
        '"""The keywords of `drfemu.run` and `drfemu.configure`.',
        "",
        f'{_GENERATED}"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TypedDict",
        "",
        '__all__ = ["RunKeywords"]',
        "",
        "",
        "class RunKeywords(TypedDict, total=False):",
        '    """Every built-in run parameter by name (`drfemu params`); None or absent: its default."""',
        "",
        *fields,
    ]) + "\n"


def echo_source() -> str:
    """The text of `schema/result_echo.py` for the declarations as they are."""
    fields = []
    for p in _built_in(run_declarations()):
        if p.echo is None:
            continue
        if p.echo in RESOLVED:
            fields.append(f'    {p.echo}: int = echoes("{p.name}", required=True)')
        else:
            fields.append(f'    {p.echo}: {_ECHO_TYPES[p.kind]} = echoes("{p.name}")')
    resolved = tuple(p.echo for p in run_declarations() if p.echo in RESOLVED)
    return "\n".join([
        '"""The fields of the result\'s echo, `schema.result.Echo`.',
        "",
        f'{_GENERATED}"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import ClassVar",
        "",
        "from drfemu.schema.result_blocks import Number, Section, echoes",
        "",
        '__all__ = ["EchoFields"]',
        "",
        "",
        "class EchoFields(Section):",
        '    """Each built-in parameter that declares an echo key, under that key."""',
        "",
        *fields,
        "",
        f"    RESOLVED: ClassVar[tuple[str, ...]] = {resolved!r}",
        '    """Echoes whose value is the parameter as the run resolved it, not as given."""',
    ]) + "\n"


if __name__ == "__main__":
    for target, source in ((KEYWORDS_TARGET, keywords_source()), (ECHO_TARGET, echo_source())):
        target.write_text(source, encoding="utf-8")
        print(f"wrote {target}", file=sys.stderr)
