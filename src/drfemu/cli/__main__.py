"""`python -m drfemu.cli` (or `python -m drfemu`) runs the `drfemu` command line."""

import sys

from drfemu.cli import main

sys.exit(main())
