"""Shared parts of the command line: the typer apps, the consoles, one-line errors, output
paths checked before any work, progress, JSON in and out."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
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

from drfemu.kernel import files
from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import parse_duration
from drfemu.kernel.params import Kind, Param

app = typer.Typer(
    name="drfemu",
    help="Emulate distributed, gossip-overlay cluster schedulers that allocate multi-resource tasks fairly.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _print_version(given: bool) -> None:
    if given:
        from drfemu._version import __version__

        print(f"drfemu {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", help="Print drfemu's version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """Emulate distributed, gossip-overlay cluster schedulers that allocate multi-resource tasks fairly."""


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


def check_writable(path: Path, option: str | None = None) -> None:
    """Refuse, before any work, an output path that cannot be written.

    The check writes: it opens an existing file for writing without truncating it, or creates the
    file and removes it again (`os.access` is not enough: `/proc` passes it and refuses the write).
    """
    name = f"{option} {path}" if option else str(path)
    if path.is_dir():
        raise CliError(f"cannot write {name}: it is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise CliError(f"cannot write {name}: directory {parent} does not exist")
    existed = path.exists()
    try:
        descriptor = os.open(path, os.O_WRONLY | (0 if existed else os.O_CREAT | os.O_EXCL), 0o644)
    except OSError as error:
        raise CliError(f"cannot write {name}: {error.strerror}") from None
    os.close(descriptor)
    if not existed:
        path.unlink()


def check_page(path: Path, option: str) -> None:
    """Refuse a page that is read and rewritten (a report whose other parts are kept) unless it is
    a new path or a regular file of UTF-8 text, and one that cannot be written."""
    if path.exists():
        if not path.is_file():
            raise CliError(f"{option} {path}: not a regular file (the page is read, then rewritten)")
        try:
            files.read_text(path, "a text page (it is read, then rewritten)", CliError)
        except CliError as error:
            raise CliError(f"{option}: {error}") from None
    check_writable(path, option)


def check_plot_path(path: Path, option: str) -> None:
    """Refuse a figure path whose extension matplotlib cannot write (it must name a file), or
    that cannot be written."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = set(FigureCanvasBase.get_supported_filetypes())
    if path.suffix.lower().lstrip(".") not in formats or not path.stem:
        raise CliError(f"{option} {path}: name a figure file ending in one of "
                       f"{', '.join('.' + f for f in sorted(formats))}")
    check_writable(path, option)


@contextmanager
def output_directory(path: Path, option: str = "--out", owned_by: tuple[str, ...] = ()) -> Iterator[Path]:
    """`path` as a directory to write into: created (with its parents) if missing and checked
    writable with a probe file; if the command then fails (an exception), every directory this
    created is removed again, with what was written into it. A command that ends by `typer.Exit`
    or is interrupted keeps what it wrote: it can be read, or resumed.

    With `owned_by` (file names the command writes there), an existing folder must be empty or
    hold one of them: the command's own earlier output, which it resumes or rewrites. A folder of
    other files is refused, so that nothing is scattered among them (`--out /`)."""
    if path.exists() and not path.is_dir():
        raise CliError(f"{option} {path}: not a directory")
    if owned_by and path.is_dir() and not any((path / name).exists() for name in owned_by):
        try:
            empty = next(path.iterdir(), None) is None
        except OSError as error:
            raise CliError(f"{option} {path}: {error.strerror}") from None
        if not empty:
            raise CliError(f"{option} {path}: a folder that holds other files (none of {', '.join(owned_by)}); "
                           "give a new or empty folder, or this command's earlier one")
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".drfemu-probe-")
        probe.close()
    except OSError as error:
        _remove_created(missing)
        raise CliError(f"cannot write into {option} {path}: {error.strerror}") from None
    try:
        yield path
    except typer.Exit:  # the command ended as it meant to (some runs failed, or it was stopped): keep
        raise
    except Exception:
        _remove_created(missing)
        raise


def _remove_created(created: list[Path]) -> None:
    if created:
        shutil.rmtree(created[-1], ignore_errors=True)  # the outermost directory this command made


def pool_size(requested: int | None, work: int, option: str = "--workers") -> int:
    """Worker processes for `work` independent jobs: the request (default: the machine's cores),
    never more than there are jobs; a request beyond the machine's bound
    (`tools.pools.max_workers`) is refused."""
    from drfemu.tools.pools import available_cores, checked_pool_size

    if requested is not None:
        checked_pool_size(requested, option)
    return max(1, min(requested or available_cores(), work))


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


def eta(started: float, done: int, total: int) -> str:
    """`ETA 1 min 20 s` from the pace so far (`started`: `time.monotonic()` at the start)."""
    from drfemu.sweeps.online import wall_duration

    if done <= 0:
        return "ETA –"
    return f"ETA {wall_duration((time.monotonic() - started) / done * (total - done))}"


def write_text(path: Path, text: str) -> None:
    """Write an output file whole or not at all: a regular file through a temporary beside it and a
    rename (a full disk leaves any earlier file as it was), anything else (`/dev/stdout`, a pipe)
    directly. A failure is one line naming the path."""
    from drfemu.sweeps.records import write_atomic

    try:
        if path.exists() and not path.is_file():
            path.write_text(text, encoding="utf-8")
        else:
            write_atomic(path, text)
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None


def refuse_options_of_another_mode(ctx: typer.Context, parameters: Iterable[str], mode: str) -> None:
    """One line naming every option among `parameters` (the command's parameter names) that was
    given on the command line although `mode` does not read it (click says which were given, so
    each option keeps its one default in the signature). The source is compared by name: typer
    may carry its own copy of click, with its own `ParameterSource`."""
    flags = {p.name: p.opts[0] for p in ctx.command.params}
    sources = {name: ctx.get_parameter_source(name) for name in parameters}
    names = [flags[name] for name, source in sources.items() if source is not None and source.name != "DEFAULT"]
    if names:
        raise CliError(f"{', '.join(names)} {'does' if len(names) == 1 else 'do'} not apply to {mode}")


def write_json(path: Path, document: dict[str, Any]) -> None:
    write_text(path, json.dumps(document, indent=2, allow_nan=False) + "\n")


def read_json(path: Path, prefix: str = "") -> Any:
    """The JSON document at `path`; one line (`prefix` first) when it cannot be read or parsed."""
    try:
        return files.read_json(path, "a JSON document", CliError)
    except CliError as error:
        raise CliError(f"{prefix}{error}") from None


@contextmanager
def run_log_file(path: Path | None) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A structlog JSON-lines writer of the run log's records (`drfemu run --log`;
    `observers.run_log`), or None. A write that fails mid-run (a full disk) is one
    line naming the file; the lines written before it stay whole. A new log is removed again if
    the command fails on a user's error (`InputError`); a bug's or a violation's log is kept."""
    if path is None:
        yield None
        return
    existed = path.exists()
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None
    logger = structlog.wrap_logger(
        structlog.WriteLogger(handle),
        processors=[structlog.processors.JSONRenderer()],
    )

    def write(record: dict[str, Any]) -> None:
        try:
            logger.info(**record)
        except OSError as error:
            raise CliError(f"cannot write --log {path}: {error.strerror}") from None

    try:
        yield write
    except InputError:
        with suppress(OSError):  # the failure being raised says it already
            handle.close()
        if not existed and path.is_file():
            path.unlink()  # a user's error: the command leaves nothing it created (a bug's log is kept)
        raise
    finally:
        try:
            handle.close()
        except OSError as error:
            if sys.exc_info()[0] is None:  # not already failing with the same cause
                raise CliError(f"cannot write --log {path}: {error.strerror}") from None


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


def declared_option(params: Iterable[Param], name: str) -> Any:
    """The typer option of the declaration `name` among `params` (its flag and help), for a
    hand-written command that takes that parameter: `Annotated[float, declared_option(...)] =
    Declaration.name` (or the command's own default). Its bounds `ge`, `le` are the option's range;
    an open bound (`gt`) or a duration is checked where the declarations are (`check_values`)."""
    p = next(p for p in params if p.name == name)
    numeric = p.kind in (Kind.INT, Kind.FLOAT)
    return typer.Option(p.option, help=p.help, min=p.ge if numeric else None, max=p.le if numeric else None)


def output_option(name: str, flag: str, help: str) -> inspect.Parameter:
    """An optional output path option (`--json`, `--log`, `--plot`)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[Path | None, typer.Option(flag, help=help)])
