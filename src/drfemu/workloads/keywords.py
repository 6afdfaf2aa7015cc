"""The keywords `drfemu.run` and `drfemu.configure` take, as a `TypedDict` for the user's type
checker (issue 59): `mypy --strict` flags `drfemu.run(neighbours=3)` and `neighbors="3"` before
the run does.

The declarations are the one source: `run_keywords.py` beside this module is written from them
(`python -m drfemu.workloads.keywords`), never by hand, and `tests/test_declarations.py` fails
when it no longer matches them. Only the built-in protocols' and workloads' parameters are in it:
a type checker reads the installed package, not the plug-ins of a user's environment, so a
plug-in's own parameter is passed through a `dict[str, Any]` (`drfemu.run(protocol="demo",
**plugin_params)`), which the checker accepts and the run checks as any other.
Decisions: every keyword may be None (its default); a duration is text with a unit or a number
of seconds; a parameter with choices is typed `str`, not a `Literal`, so a value held in a
variable type-checks (the run refuses a wrong one in one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

from drfemu.kernel.params import Kind, Param
from drfemu.protocols.registry import BUILT_IN as PROTOCOLS_BUILT_IN
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.params import ProtocolChoice, RunParams
from drfemu.workloads.points import WorkloadChoice, point_declarations
from drfemu.workloads.registry import BUILT_IN as WORKLOADS_BUILT_IN
from drfemu.workloads.registry import WORKLOADS

__all__ = ["TARGET", "keywords_source"]

TARGET = Path(__file__).with_name("run_keywords.py")
"""The generated module."""

EXPLICIT = frozenset(p.name for p in (*ProtocolChoice.PARAMS, *WorkloadChoice.PARAMS))
"""The choices `drfemu.run` takes as its first two arguments, so not among its keywords."""

_TYPES = {Kind.INT: "int", Kind.FLOAT: "float", Kind.BOOL: "bool", Kind.TEXT: "str", Kind.DURATION: "str | float"}


def _built_in() -> list[Param]:
    """The point parameters that the package itself declares, in `point_declarations` order."""
    own = {p.name for p in (*RunParams.PARAMS, *WorkloadChoice.PARAMS)}
    own |= {p.name for name in PROTOCOLS_BUILT_IN for p in PROTOCOLS[name].params}
    own |= {p.name for name in WORKLOADS_BUILT_IN for p in WORKLOADS[name].params}
    return [p for p in point_declarations() if p.name in own and p.name not in EXPLICIT]


def keywords_source() -> str:
    """The text of `run_keywords.py` for the declarations as they are."""
    lines = [
        '"""The keywords of `drfemu.run` and `drfemu.configure`: written by `python -m drfemu.workloads.keywords`',
        'from the parameters\' declarations (`drfemu.workloads.keywords`); do not edit."""',
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
    ]
    lines += [f"    {p.name}: {_TYPES[p.kind]} | None" for p in _built_in()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    TARGET.write_text(keywords_source(), encoding="utf-8")
    print(f"wrote {TARGET}", file=sys.stderr)
