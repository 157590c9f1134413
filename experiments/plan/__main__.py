"""`python -m experiments.plan [options] [with ...]` (cli.py)."""

import sys

from experiments.plan.cli import main

sys.exit(main())
