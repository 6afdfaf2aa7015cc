"""The `drfemu` command line (`commands.py`); `main` is the installed script's entry point."""

from drfemu.experiments.cli.commands import app, main

__all__ = ["app", "main"]
