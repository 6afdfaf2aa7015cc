"""`python -m experiments.cli` runs the `drfemu` command line."""

import sys

from experiments.cli.app import main

sys.exit(main())
