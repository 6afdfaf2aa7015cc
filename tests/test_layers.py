"""The layers of the package, stated by folder and checked on the code's own imports.

Each folder of `src/drfemu` is one layer; a module may import modules of its own layer and of the
layers before it in `LAYERS`, never a later one — imports inside functions included, so no
layer reaches a later one even transitively. The package's face (`drfemu/__init__.py`, which
loads its names on first use, and `__main__.py`) sits above them all. Modules form no import
cycle. The stages that handle data only (workloads, sweeps, reports) load no actor and no C
extension, checked in a fresh interpreter (`docs/architecture.md`, "Layers").
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "drfemu"

LAYERS = ("kernel", "policies", "overlay", "protocols", "nodes", "schema", "observers", "assembly", "tools",
          "workloads", "sweeps", "reports", "studies", "live", "api", "cli")
"""Each layer may import itself and the layers before it. `_version` is part of the kernel."""

FACE = ("__init__", "__main__")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _layer(module: str) -> str:
    first = module.split(".")[1] if module.count(".") else "__init__"
    return "kernel" if first == "_version" else first


def _imports(path: Path) -> set[str]:
    """The drfemu modules `path` imports (anywhere in the file; `from drfemu.x import y` counts as
    `drfemu.x.y` when that is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {name for name in names if name == "drfemu" or name.startswith("drfemu.")}


MODULES = {_module(path): path for path in PACKAGE.rglob("*.py")}


def test_every_folder_is_a_layer() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert folders | (modules - {*FACE, "_version"}) == set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_itself_and_earlier_layers(layer: str) -> None:
    allowed = set(LAYERS[:LAYERS.index(layer) + 1])
    for module, path in MODULES.items():
        if _layer(module) != layer:
            continue
        later = sorted(m for m in _imports(path) if m != "drfemu" and _layer(m) not in allowed)
        assert not later, f"{module} ({layer}) imports {later}, of a later layer"


def test_no_module_imports_the_package_face() -> None:
    """`drfemu/__init__.py` loads the public names; nothing inside the package reaches for them."""
    for module, path in MODULES.items():
        if _layer(module) not in FACE:
            assert "drfemu" not in _imports(path), f"{module} imports the package face"


def test_no_import_cycles_among_modules() -> None:
    graph = {module: {m for m in _imports(path) if m in MODULES} for module, path in MODULES.items()}
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail + [module, target]))
            if not state.get(target):
                visit(target, trail + [module])
        state[module] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [])


def test_no_module_is_over_600_lines() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long


ACTOR_ROOTS = ("drfemu.nodes.actor", "drfemu.nodes.runtime")  # every actor and the runtime import these

LOADS_NOTHING_HEAVY = """
import importlib, importlib.machinery, json, pkgutil, sys
import drfemu.{stage} as stage
for info in pkgutil.walk_packages(stage.__path__, stage.__name__ + "."):
    importlib.import_module(info.name)
suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
print(json.dumps(sorted(name for name, module in sys.modules.items() if name.startswith("drfemu.")
                        and (name in {roots} or str(getattr(module, "__file__", "")).endswith(suffixes)))))
"""


@pytest.mark.parametrize("stage", ["workloads", "sweeps", "reports"])
def test_the_data_stages_load_no_actor_and_no_c_extension(stage: str) -> None:
    """Checked in a fresh interpreter over every module of the stage, so transitive imports count."""
    code = LOADS_NOTHING_HEAVY.format(stage=stage, roots=set(ACTOR_ROOTS))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [], f"importing drfemu.{stage} loads {done.stdout.strip()}"


ONE_MODULE_PER_NAME = """
import importlib, json, sys
for name in ("protocols", "nodes", "overlay", "experiments", "kernel", "schema"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit(f"a top-level {name!r} is importable beside drfemu")
import drfemu.protocols.registry as registry
from drfemu.protocols.registry import ProtocolSpec
print(json.dumps({"registry": registry.__file__, "spec": ProtocolSpec.__module__,
                  "doubles": sorted(m for m in sys.modules if m.split(".")[0] in ("protocols", "nodes", "overlay"))}))
"""


@pytest.mark.parametrize("where", ["repository root", "a folder of the user's own"])
def test_one_module_object_per_name(where: str, tmp_path: Path) -> None:
    """From the repository root or any other folder, the package's modules exist once, under
    `drfemu.` only: a notebook in the checkout cannot load a second registry by folder name."""
    cwd = PACKAGE.parent.parent if where == "repository root" else tmp_path
    done = subprocess.run([sys.executable, "-c", ONE_MODULE_PER_NAME], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    import drfemu.protocols.registry as registry  # the checkout's, or the installed wheel's (.ci/wheel)

    assert Path(seen["registry"]).resolve() == Path(registry.__file__).resolve()
    assert seen["spec"] == "drfemu.protocols.spec" and seen["doubles"] == []


def _functions(layer: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{path.relative_to(PACKAGE)}:{node.name}", node


def test_the_assembly_is_made_of_short_functions() -> None:
    """A run is assembled step by step: no function of the assembly is over 40 lines."""
    long = {name: n for name, node in _functions("assembly") if (n := node.end_lineno - node.lineno + 1) > 40}
    assert not long, long


@pytest.mark.parametrize("layer", ["assembly", "observers"])
def test_no_function_takes_more_than_8_parameters(layer: str) -> None:
    """Where a run is assembled and observed, what travels together is one typed object."""
    def count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
        args = node.args
        return len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)

    many = {name: n for name, node in _functions(layer) if (n := count(node)) > 8}
    assert not many, many
