"""The one error type for bad input.

`InputError` means something a user gave (an option, a config, a workload, a file) is wrong:
the command line prints its message as one line and exits with status 2. Any other
exception escaping a command is a bug in drfemu: its traceback is shown and the exit status
is 70 (see `cli`).
"""

from __future__ import annotations

__all__ = ["InputError", "PluginWarning", "UnreadOptionWarning"]


class InputError(ValueError):
    """Bad input, with a one-line message that names the problem."""


class PluginWarning(UserWarning):
    """A protocol of another package could not be added; the message names it and says why."""


class UnreadOptionWarning(UserWarning):
    """A run option was given that the chosen protocol or placement does not read: it is ignored
    (the command line prints the same line as `drfemu: warning: …`)."""
