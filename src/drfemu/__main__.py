"""The `drfemu` script and `python -m drfemu`: the command line (`drfemu.cli`), imported when it runs.

The installed script names `main` here rather than in `drfemu.cli` so that importing the script
costs nothing: a process that multiprocessing spawns (the benchmark's and the checker's samples,
each in a fresh process) imports the parent's script again, and would otherwise load the whole
command line, about half a second, before its first sample.
"""

import sys


def main() -> int:
    """Run the `drfemu` command line on `sys.argv`; returns the exit status."""
    from drfemu.cli import main as command_line

    return command_line()


if __name__ == "__main__":
    sys.exit(main())
