"""drfemu installs as one import package and works from any folder, whatever that folder holds."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "drfemu"
PACKAGES = tuple(sorted(p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists()))
"""The layers of the package (`drfemu.kernel`, …, `drfemu.cli`): never imported by a bare name."""


def test_the_distribution_installs_one_top_level_name() -> None:
    top_level = distribution("drfemu").read_text("top_level.txt") or ""
    assert top_level.split() == ["drfemu"]


def test_no_module_imports_a_bare_top_level_name_of_ours() -> None:
    """Inside the tree every import of our code goes through `drfemu.`, so a user's own
    `protocols.py` can never stand in for ours (and no module is loaded twice)."""
    for folder in (SOURCE, ROOT / "tests"):
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                         else [])
                bare = [n for n in names if n.split(".")[0] in PACKAGES]
                assert not bare, f"{path.relative_to(ROOT)} imports {bare}"


@pytest.fixture
def crowded_folder(tmp_path: Path) -> Path:
    """A research folder whose own modules carry our subpackages' names, each failing loudly if imported."""
    (tmp_path / "protocols.py").write_text("raise SystemExit('the folder own protocols.py was imported')\n")
    (tmp_path / "nodes.py").write_text("raise SystemExit('the folder own nodes.py was imported')\n")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "__init__.py").write_text("raise SystemExit('the folder own experiments/ was "
                                                          "imported')\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "__init__.py").write_text("raise SystemExit('the folder own overlay/ was imported')\n")
    return tmp_path


def _run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_module_and_library_work_from_a_folder_with_modules_of_the_same_names(crowded_folder: Path) -> None:
    small = ["--machines", "10", "--users", "3"]
    beside = Path(sys.executable).with_name("drfemu")  # this interpreter's own script (a venv's)
    script = str(beside) if beside.exists() else shutil.which("drfemu")
    assert script is not None, "the console script is not installed"
    for command in ([script, "run", *small], [sys.executable, "-m", "drfemu", "run", *small]):
        done = _run(command, crowded_folder)
        assert done.returncode == 0, done.stderr
        assert "minimum dominant share" in done.stdout
    done = _run([sys.executable, "-c", "import drfemu; print(drfemu.run(protocol='drf').min_dominant_share)"],
                crowded_folder)
    assert done.returncode == 0, done.stderr
    assert 0 < float(done.stdout) <= 1
