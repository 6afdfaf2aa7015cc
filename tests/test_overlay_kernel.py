"""Cyclon's merge rule and the gradient's rank exist in exactly two places (issue 57): the Python
reference (`overlay.cyclon.merge_python`, `overlay.gradient.rank_python`) and the C kernel
(`src/native/_overlay_kernel.h`), which every compiled overlay uses, the event-driven one and the
cycle-driven one alike. These tests read the source: a third copy fails them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
KERNEL = SRC / "native" / "_overlay_kernel.h"
PYTHON_REFERENCES = {"merge_python": "overlay/cyclon.py", "rank_python": "overlay/gradient.py"}
C_KERNEL = {"kernel_merge_plan", "kernel_rank"}
# What a function that merges or ranks may call instead of holding the rule: the reference, the
# accelerated name bound to it, or (C) the kernel.
PYTHON_DELEGATES = ("merge_python(", "rank_python(", "merge(", "rank(")
C_DELEGATES = ("kernel_merge_plan(", "kernel_rank(")
OTHER_RULES = {("overlay/kompics_gradient.py", "_merge"):
               "Kompics' gradient keeps its own view by its own rule (a softmax over preference), not the rank"}
OVERLAY_PYTHON = [*sorted((SRC / "drfemu" / "overlay").glob("*.py")), SRC / "drfemu" / "nodes" / "overlay_peer.py"]


def _ranks_or_merges(name: str) -> bool:
    return "rank" in name.lower() or "merge" in name.lower()


def _python_functions() -> list[tuple[str, str, str]]:
    """(file relative to the package, function name, its source) of every function of the overlay's
    Python modules whose name says it merges or ranks."""
    found = []
    for path in OVERLAY_PYTHON:
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _ranks_or_merges(node.name):
                found.append((str(path.relative_to(SRC / "drfemu")), node.name, ast.get_source_segment(text, node) or ""))
    return found


_C_DEFINITION = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \t\*]*?\b(\w+)\s*\(([^;{]*?)\)\s*\{", re.MULTILINE | re.DOTALL)


def _c_functions() -> list[tuple[str, str, str]]:
    """(file, function name, body) of every C function defined under `src/native`."""
    found = []
    for path in sorted((SRC / "native").glob("*.[ch]")):
        text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.DOTALL)
        for match in _C_DEFINITION.finditer(text):
            depth, at = 1, match.end()
            while depth and at < len(text):
                depth += {"{": 1, "}": -1}.get(text[at], 0)
                at += 1
            found.append((path.name, match.group(1), text[match.end():at]))
    return found


def test_the_source_reader_finds_the_definitions_it_looks_for() -> None:
    python = {(f, name) for f, name, _ in _python_functions()}
    c = {(f, name) for f, name, _ in _c_functions()}
    assert {(f, name) for name, f in PYTHON_REFERENCES.items()} <= python
    assert {("_overlay_kernel.h", name) for name in C_KERNEL} <= c
    assert ("_rank.c", "rank") in c and ("_cyclon.c", "merge") in c and ("_cycle.c", "merge") in c


@pytest.mark.parametrize("where", sorted({f for f, _, _ in _python_functions()}))
def test_python_merges_and_ranks_delegate_to_the_reference(where: str) -> None:
    for path, name, source in _python_functions():
        if path != where or PYTHON_REFERENCES.get(name) == path or (path, name) in OTHER_RULES:
            continue
        body = source.split(":", 1)[1]
        assert any(call in body for call in PYTHON_DELEGATES), f"{path}: {name} merges or ranks by a rule of its own"
        assert "sorted(" not in body and "bisect" not in body, f"{path}: {name} sorts: a copy of the rank?"


def test_c_merges_and_ranks_use_the_kernel() -> None:
    functions = _c_functions()
    delegating = {(path, name) for path, name, body in functions if any(call in body for call in C_DELEGATES)}
    grown = True
    while grown:  # a function that calls a delegating function of its file or of a shared header delegates too
        before = len(delegating)
        delegating |= {(path, name) for path, name, body in functions
                       if any(f"{other}(" in body for where, other in delegating
                              if where == path or where.endswith(".h"))}
        grown = len(delegating) > before
    for path, name, _ in functions:
        if _ranks_or_merges(name) and path != KERNEL.name and not name.startswith("PyInit_"):
            assert (path, name) in delegating, f"{path}: {name} merges or ranks without the kernel"


def test_the_kernels_steps_are_defined_only_in_the_kernel() -> None:
    kernel_functions = {name for path, name, _ in _c_functions() if path == KERNEL.name}
    assert C_KERNEL <= kernel_functions
    elsewhere = [(path, name) for path, name, _ in _c_functions()
                 if path != KERNEL.name and (name in kernel_functions or "insert_capped" in name
                                              or "keep_freshest" in name)]
    assert not elsewhere, f"the kernel's steps written again: {elsewhere}"


def test_every_compiled_overlay_includes_the_kernel() -> None:
    for source in ("_rank.c", "_cyclon.c", "_cycle.c", "_plane.c"):
        assert '#include "_overlay_kernel.h"' in (SRC / "native" / source).read_text(), source
