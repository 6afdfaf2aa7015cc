"""The `drfemu` command line: every command group registered on one typer app, and `main`.

Bad input — an `InputError`: a bad option, a malformed workload, an unknown protocol — is
printed as one line `drfemu: error: …` on stderr with exit status 2, never with a traceback.
A capacity violation (a protocol bug caught by the checks) exits with status 3. Any other
exception is a bug in drfemu: its traceback is printed, then one line, and the exit status
is 70 (`EX_SOFTWARE`). An `OSError` no command answered itself — a path of the user's that
cannot be read or written, a disk that filled up mid-run — is one line naming the path and the
system's reason, exit 2 (a closed stdout, `drfemu … | head`, ends quietly: click's exit 1). SIGINT,
SIGTERM and SIGHUP stop every command alike (`cli.stopping`): exit 130, 143 or 129.
"""

from __future__ import annotations

import sys
import traceback

import typer

import drfemu.cli.bench  # noqa: F401  (registers its commands)
import drfemu.cli.overlay  # noqa: F401  (registers its commands)
import drfemu.cli.policy  # noqa: F401  (registers its commands)
import drfemu.cli.sweep  # noqa: F401  (registers its commands)
import drfemu.cli.workload  # noqa: F401  (registers its commands)
from drfemu.cli.common import INTERNAL_ERROR, INTERRUPTED, app
from drfemu.cli.live import live, live_signature
from drfemu.cli.run import run, run_command_signature
from drfemu.cli.stopping import signals_stop_the_command, stop_reason, stop_status, stopped
from drfemu.cli.workload import install_workload_commands
from drfemu.kernel.errors import InputError
from drfemu.kernel.resources import CapacityViolation
from drfemu.live.channel import LiveError


def _install_declared_commands() -> None:
    """(Re)declare `drfemu run`, `drfemu live` and the workload commands from the current
    registries, so a protocol or workload registered after import (a plug-in, a test) brings its
    options along."""
    install_workload_commands()
    run.__signature__ = run_command_signature()  # type: ignore[attr-defined]
    live.__signature__ = live_signature()  # type: ignore[attr-defined]
    app.registered_commands[:] = [c for c in app.registered_commands if c.name not in ("run", "live")]
    app.command("run")(run)
    app.command("live")(live)
    commands = app.registered_commands
    commands.insert(0, commands.pop(next(i for i, c in enumerate(commands) if c.name == "run")))  # first in --help


def _fail(message: str, status: int) -> int:
    # Plain write, never wrapped: an error is exactly one line.
    print(f"drfemu: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `drfemu` script; returns the exit status."""
    _install_declared_commands()
    with signals_stop_the_command():
        status = _run(argv)
    if status == INTERRUPTED and stopped():  # an interrupt path that answered 130 for any signal
        return stop_status()
    return status


def _run(argv: list[str] | None) -> int:
    try:
        status = app(args=argv, prog_name="drfemu", standalone_mode=False)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:  # typer's answer to KeyboardInterrupt: Ctrl-C, SIGTERM or SIGHUP
        return _fail(stop_reason(), stop_status())
    except typer.TyperException as error:  # usage errors: unknown option, bad value, ...
        if type(error).__name__ == "NoArgsIsHelpError":  # `drfemu` or a group given no command
            print(error.format_message())  # type: ignore[attr-defined]
            return 0
        return _fail(f"error: {error.format_message()}", 2)  # type: ignore[attr-defined]
    except InputError as error:  # CliError, WorkloadError, SweepConfigError, PolicyInputError, UnknownProtocol, …
        return _fail(f"error: {error}", 2)
    except LiveError as error:
        return _fail(f"live run failed: {error}", 1)
    except CapacityViolation as error:
        return _fail(f"capacity violation (protocol bug, run aborted): {error}", 3)
    except OSError as error:  # a user's path that cannot be read or written, or a full disk
        return _fail(f"error: {_os_error_line(error)}", 2)
    except Exception as error:  # noqa: BLE001 - anything else is a bug: show where it happened
        traceback.print_exc()
        return _fail(f"internal error (a bug in drfemu, please report it with the traceback above): "
                     f"{type(error).__name__}: {error}", INTERNAL_ERROR)
    if status == INTERRUPTED:  # typer's answer to Ctrl-C: the status, without a word
        return _fail(stop_reason(), stop_status())
    return status if isinstance(status, int) else 0


def _os_error_line(error: OSError) -> str:
    """One line for an `OSError` no command turned into its own message: the path(s) it names and
    the system's reason (a write to a full disk names no path)."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return f"cannot read or write: {reason}"
    paths = f"{error.filename} → {error.filename2}" if error.filename2 is not None else str(error.filename)
    return f"{paths}: {reason}"

