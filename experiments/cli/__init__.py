"""The `drfemu` command line (`app.py`); `main` is the installed script's entry point."""

from experiments.cli.app import app, main

__all__ = ["app", "main"]
