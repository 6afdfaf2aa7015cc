"""`python -m drfemu.experiments.cli` (or `python -m drfemu`) runs the `drfemu` command line."""

import sys

from drfemu.experiments.cli import main

sys.exit(main())
