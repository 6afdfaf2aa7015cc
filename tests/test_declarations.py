"""One declaration per fact, checked on the source: a run parameter, a result field, a public
name, a message's size — each is written in one place, and everything else derives from it.

The checks read the package's source (`ast`), so a second declaration fails them wherever it is
written: a `param(...)` field or a `Param("name", ...)` of a name declared elsewhere, an
annotated field of a result section that another section has, a dict literal that spells the
result document's keys, a public name imported twice by the package's face, a message class
that states its `WIRE` beside fields that already say it.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drfemu
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.overlay_result import OverlayResult
from drfemu.schema.result import SECTIONS, RunResult, Section
from drfemu.workloads.points import point_declarations

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "drfemu"


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _parameter_declarations() -> Counter[str]:
    """Every parameter declaration in the source: `name: T = param(...)` in a class body, and
    `Param("name", ...)`."""
    found: Counter[str] = Counter()
    for _, tree in _modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "param"):
                found[node.target.id] += 1
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Param" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                found[str(node.args[0].value)] += 1
    return found


def test_every_parameter_is_declared_in_one_place() -> None:
    declared = _parameter_declarations()
    names = {p.name for p in (*point_declarations(), *OverlayConfig.PARAMS)}
    assert names <= set(declared), f"declared nowhere the test can see: {sorted(names - set(declared))}"
    twice = {name: n for name, n in declared.items() if n > 1}
    assert not twice, f"parameters declared in more than one place: {twice}"


def _section_fields() -> Counter[str]:
    """The annotated fields of every result section class in the source."""
    sections = {base.__name__ for cls in (*SECTIONS, RunResult) for base in cls.__mro__ if issubclass(base, Section)}
    sections |= {"RunResult"}
    found: Counter[str] = Counter()
    for _, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in sections:
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        found[item.target.id] += 1
    return found


def test_every_result_field_is_declared_in_one_section() -> None:
    fields = _section_fields()
    document = set(RunResult.model_fields)
    assert document <= set(fields)
    twice = {name: n for name, n in fields.items() if n > 1 and not name.startswith("_")}
    assert not twice, f"result fields declared in more than one section: {twice}"
    assert all(issubclass(cls, Section) for cls in SECTIONS)


RESULT_MAKERS = ("assembly", "observers", "live")
"""The layers that make results: they build sections, never a dict of a document's keys."""


def test_no_dict_literal_spells_the_result_document() -> None:
    """The document is composed of the sections' fields: where results are made, no dict literal
    holds three of its keys (nor of an overlay run's document, `schema.overlay_result`)."""
    keys = set(RunResult.model_fields) | set(OverlayResult.model_fields)
    offenders = []
    for path, tree in _modules():
        if path.relative_to(PACKAGE).parts[0] not in RESULT_MAKERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                spelled = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(spelled & keys) >= 3:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {sorted(spelled & keys)}")
    assert not offenders, offenders


def test_every_public_name_is_written_once() -> None:
    """`drfemu/__init__.py` names each public name in one import line; the lazy table and
    `__all__` are read from those lines, not written again."""
    import drfemu

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    imported = Counter(alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                       and node.module and node.module.startswith("drfemu") for alias in node.names)
    assert {name: n for name, n in imported.items() if n > 1} == {}
    assert set(imported) == set(drfemu.__all__)
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not strings & (set(imported) - {"__version__"}), "a public name is spelled again as text"


def test_message_sizes_derive_from_the_fields() -> None:
    """No message class of the package states its `WIRE`: `@message` derives it from the fields'
    annotations (`kernel.messages`)."""
    stated = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    target = item.target if isinstance(item, ast.AnnAssign) else (
                        item.targets[0] if isinstance(item, ast.Assign) else None)
                    if isinstance(target, ast.Name) and target.id == "WIRE":
                        stated.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert stated == []


@pytest.mark.parametrize("kind", ["protocols", "workloads"])
def test_plugins_are_listed_without_being_imported(kind: str) -> None:
    """The registries list every entry by name; listing imports no plug-in module."""
    import subprocess
    import sys

    code = (f"import sys, json\nfrom drfemu.{kind}.registry import {kind.upper()} as r\nnames = list(r)\n"
            f"print(json.dumps([names, sorted(m for m in sys.modules if m.startswith('drfemu.{kind}.') "
            f"and not m.endswith(('registry', 'spec', 'rule', 'central', 'cluster', 'devices', 'fragmentation', "
            f"'homes', 'messages', 'placement')))]))")
    import json

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, loaded = json.loads(done.stdout)
    assert len(names) >= 2 and loaded == [], loaded


def test_the_modules_written_from_the_declarations_are_current() -> None:
    """`drfemu.run`'s typed keywords (`workloads/run_keywords.py`) and the result's echo
    (`schema/result_echo.py`) are written from the declarations, never edited: a parameter
    declared, renamed, retyped or echoed without rewriting them fails here."""
    from drfemu.workloads.derived import ECHO_TARGET, KEYWORDS_TARGET, echo_source, keywords_source

    assert KEYWORDS_TARGET.read_text(encoding="utf-8") == keywords_source(), "run: python -m drfemu.workloads.derived"
    assert ECHO_TARGET.read_text(encoding="utf-8") == echo_source(), "run: python -m drfemu.workloads.derived"
    from drfemu.workloads.run_keywords import RunKeywords

    built_in = {p.name for p in drfemu.params()} - {"protocol", "workload"}
    assert set(RunKeywords.__annotations__) <= built_in and "neighbors" in RunKeywords.__annotations__


def test_who_reads_a_parameter_is_declared_on_it_not_listed_beside_it() -> None:
    """Which protocols, placements and modes read a parameter is said on its declaration
    (`Param.read_by`, `Param.when`); a module-level list of parameter names beside it (what
    `_DISTRIBUTED`, `PLACEMENT_READS` and `CYCLE_ONLY` were) fails here."""
    names = {p.name for p in point_declarations()} | {p.name for p in OverlayConfig.PARAMS}
    listed = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path, tree in _modules() for node in tree.body
              if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Tuple | ast.List | ast.Set)
              and len(node.value.elts) >= 2
              and all(isinstance(e, ast.Constant) and e.value in names for e in node.value.elts)]
    assert not listed, listed


def test_no_field_of_a_result_is_left_untyped() -> None:
    """Every field of every section of the result, and of the blocks inside them, has a type: no
    `Any` (a free-form `dict[str, Any]`) anywhere, down to the last field."""
    import typing

    from pydantic import BaseModel

    def untyped(annotation: Any) -> bool:
        return annotation is Any or any(untyped(arg) for arg in typing.get_args(annotation))

    seen: set[type[BaseModel]] = set()
    found: list[str] = []

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, field in model.model_fields.items():
            if untyped(field.annotation):
                found.append(f"{model.__name__}.{name}: {field.annotation}")
            for arg in (field.annotation, *typing.get_args(field.annotation)):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    walk(arg)
                for inner in typing.get_args(arg):
                    if isinstance(inner, type) and issubclass(inner, BaseModel):
                        walk(inner)

    for section in SECTIONS:
        walk(section)
    assert not found, found


def test_every_workload_command_takes_its_declared_options() -> None:
    """`drfemu workload NAME`'s options are its workload's declarations and `-o`, nothing restated:
    a generated workload's are those `drfemu run --workload NAME` takes."""
    from typer.main import get_command

    from drfemu.cli.common import workload_app
    from drfemu.cli.workload import install_workload_commands
    from drfemu.workloads.registry import WORKLOADS, file_only_workloads

    install_workload_commands()
    commands = get_command(workload_app).commands  # type: ignore[attr-defined]
    specs = {spec.name: spec for spec in (*WORKLOADS.values(), *file_only_workloads())}
    assert set(commands) == {*specs, "extract"}
    for name, spec in specs.items():
        flags = [option for p in commands[name].params for option in p.opts if option.startswith("--")]
        assert flags == ["--output", *(p.option for p in spec.params)], name


def _declared_flags() -> set[str]:
    from drfemu.workloads.online import OnlineParams
    from drfemu.workloads.registry import file_only_workloads

    return {p.option for p in (*point_declarations(), *OverlayConfig.PARAMS, *OnlineParams.PARAMS,
                               *(p for spec in file_only_workloads() for p in spec.params))}


def test_no_command_restates_a_declared_option() -> None:
    """A hand-written command's option that a declaration already names (`--seed`, `--minutes`,
    `--neighbors`, …) takes its flag and help from it (`cli.common.declared_option`)."""
    declared = _declared_flags()
    restated = []
    for path, tree in _modules():
        if path.relative_to(PACKAGE).parts[0] != "cli":
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for arg in (*node.args.args, *node.args.kwonlyargs):
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if "typer.Option(" not in text:
                    continue
                spelled = [c.value for c in ast.walk(arg.annotation) if isinstance(c, ast.Constant)  # type: ignore[arg-type]
                           and isinstance(c.value, str) and c.value.startswith("--")]
                flag = spelled[0] if spelled else "--" + arg.arg.replace("_", "-")
                if flag in declared:
                    restated.append(f"{path.relative_to(PACKAGE)}:{node.name} {flag}")
    assert restated == [], restated


def test_the_overlay_result_restates_no_parameter() -> None:
    """An overlay run's document holds its parameters in `config`, read from the declarations: no
    other field of it, nor of its recovery summary, is named like a parameter (the rows were
    `rounds` and `perturbations`), and the engine's section is composed in, not restated."""
    from drfemu.schema.overlay_result import OverlayTraffic, Recovery

    parameters = {p.name for p in OverlayConfig.PARAMS}
    assert (set(OverlayResult.model_fields) | set(Recovery.model_fields)) & parameters == set()
    own = Counter(name for cls in (OverlayTraffic, OverlayResult) for name in cls.__annotations__)
    assert {name: n for name, n in own.items() if n > 1} == {}
    assert set(OverlayTraffic.model_fields) <= set(OverlayResult.model_fields)
