"""`python -m experiments.cli` runs the `drfemu` command line."""

import sys

from experiments.cli.commands import main

sys.exit(main())
