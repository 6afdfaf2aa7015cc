"""Shared parts of the command line: the typer apps, the consoles, one-line errors, output
paths checked before any work, progress, JSON in and out."""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import structlog
import typer
from rich.console import Console
from rich.progress import (
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from drfemu.nodes.latency import parse_duration
from drfemu.protocols.errors import InputError
from drfemu.protocols.params import Kind, Param

app = typer.Typer(
    name="drfemu",
    help="Emulate distributed, gossip-overlay cluster schedulers that allocate multi-resource tasks fairly.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


workload_app = typer.Typer(help="Build workload files.", no_args_is_help=True)
app.add_typer(workload_app, name="workload")


out = Console()


err = Console(stderr=True)


INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE


INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C




class CliError(InputError):
    """A user error: printed as one line, exit status 2."""


def duration_option(text: str, name: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise CliError(f"--{name}: {error}") from None
    if seconds <= 0:
        raise CliError(f"--{name} must be positive")
    return seconds


def check_writable(path: Path) -> None:
    """Refuse, before any work, an output path that cannot be written."""
    if path.is_dir():
        raise CliError(f"cannot write {path}: it is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CliError(f"cannot write {path}: permission denied")


@contextmanager
def progress_reporter(start: str, every_s: float = 5.0) -> Iterator[Callable[[str], None]]:
    """A progress reporter: a live spinner on a terminal, else one line on stderr every
    `every_s` seconds of wall time (long commands are never silent)."""
    if err.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                      transient=True) as bar:
            task = bar.add_task(start, total=None)
            yield lambda text: bar.update(task, description=text)
        return
    started = time.monotonic()
    last = [started]

    def report(text: str) -> None:
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            print(f"drfemu: {text} ({now - started:.0f} s)", file=sys.stderr, flush=True)

    yield report


def write_json(path: Path, document: dict[str, Any]) -> None:
    try:
        path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None


def read_json(path: Path, prefix: str = "") -> Any:
    """The JSON document at `path`; one line (`prefix` first) when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"{prefix}cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise CliError(f"{prefix}{path}: not JSON ({error.msg}, line {error.lineno})") from None
    except UnicodeDecodeError:
        raise CliError(f"{prefix}{path}: not JSON (not UTF-8 text)") from None


@contextmanager
def run_log_file(path: Path | None) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A structlog JSON-lines writer of the run log's records (`drfemu run --log`;
    `experiments.running.run_log`), or None."""
    if path is None:
        yield None
        return
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None
    logger = structlog.wrap_logger(
        structlog.WriteLogger(handle),
        processors=[structlog.processors.JSONRenderer()],
    )

    def write(record: dict[str, Any]) -> None:
        logger.info(**record)

    try:
        yield write
    finally:
        handle.close()


def option_help(p: Param) -> str:
    text = f"{p.help} ({'|'.join(p.choices)})" if p.choices else p.help
    if p.default is None:
        return text
    default = f"{p.default:g}s" if p.kind is Kind.DURATION else str(p.default).lower() if p.kind is Kind.BOOL else p.default
    return f"{text} [default: {default}]"


def _option_type(p: Param) -> Any:
    return {Kind.INT: int, Kind.FLOAT: float, Kind.BOOL: bool, Kind.TEXT: str, Kind.DURATION: str}[p.kind] | None


def declared_options(params: Iterable[Param]) -> list[inspect.Parameter]:
    """One command-line option per declaration, each defaulting to None so that what the user
    gave can be told apart (the declared default is shown in the help and filled in later)."""
    options = []
    for p in params:
        flags = [f"{p.option}/--no-{p.option[2:]}"] if p.kind is Kind.BOOL else [p.option]
        options.append(inspect.Parameter(
            p.name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[_option_type(p), typer.Option(*flags, help=option_help(p), show_default=False)]))
    return options


def output_option(name: str, flag: str, help: str) -> inspect.Parameter:
    """An optional output path option (`--json`, `--log`, `--plot`)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[Path | None, typer.Option(flag, help=help)])
