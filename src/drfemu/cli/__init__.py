"""The `drfemu` command line: one module per command group, over the Python API
(`api`); `main` is the installed script's entry point (`app.py`)."""

import sys
import warnings

from drfemu.kernel.errors import PluginWarning

_show = warnings.showwarning


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: object = None,
              line: str | None = None) -> None:
    """A plug-in that could not be added is one line on stderr (set before the registry loads them)."""
    if issubclass(category, PluginWarning):
        print(f"drfemu: warning: {message}", file=sys.stderr)
    else:
        _show(message, category, filename, lineno, file, line)  # type: ignore[arg-type]


warnings.showwarning = _one_line

from drfemu.cli.app import app, main  # noqa: E402  (after the warning format is set)

__all__ = ["app", "main"]
