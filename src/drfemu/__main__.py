"""The `drfemu` script and `python -m drfemu`: the command line (`drfemu.cli`), imported when it runs.

The installed script names `main` here rather than in `drfemu.cli` so that importing the script
costs nothing: a process that multiprocessing spawns (the benchmark's and the checker's samples,
each in a fresh process) imports the parent's script again, and would otherwise load the whole
command line, about half a second, before its first sample.
"""

import gc
import sys


def main() -> int:
    """Run the `drfemu` command line on `sys.argv`; returns the exit status.

    The process ends when this returns, so the cyclic collector is switched off and the heap
    frozen first: the interpreter's exit would otherwise search all of it for cycles, three
    times (measured: 5 % of a 5-minute trace cut's whole command, for nothing the command
    still needs; objects are still freed by reference counting as modules are torn down)."""
    from drfemu.cli import main as command_line

    status = command_line()
    gc.disable()
    gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(main())
