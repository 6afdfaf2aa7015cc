"""The optional C accelerators: which this process uses.

Every C extension of the project (`overlay._rank`, `overlay._cyclon`, `nodes._plane`,
`nodes._engine`, `protocols._gini`, `protocols._probe`, `protocols._ddrf`, `overlay._cycle`) compiles a Python function that stays in the code as its
reference; runs give the same events either way, and on any input the C gives its reference's
answer or exception (it hands whatever it does not accelerate to the reference; issue 39).
`compiled_module(name)` is the one place that decides: the extension module, or None when it was
not built or when the environment variable `DRFEMU_PURE_PYTHON` is set to anything but `""` or
`"0"` (to check a result, or to profile the Python references). The choice is made when a module imports, so it holds for a whole process.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["PURE_PYTHON", "SKIP_REASON", "compiled_module"]

PURE_PYTHON = os.environ.get("DRFEMU_PURE_PYTHON", "") not in ("", "0")
SKIP_REASON = ("DRFEMU_PURE_PYTHON asks for the Python references" if PURE_PYTHON
               else "not built: the install found no C compiler")
"""Why `compiled_module` gives None, for a test that needs the C to say when it skips."""


def compiled_module(name: str) -> ModuleType | None:
    """The C extension `name`, or None if it is missing or pure Python was asked for."""
    if PURE_PYTHON:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # built without a C compiler: the Python reference is used
        return None
