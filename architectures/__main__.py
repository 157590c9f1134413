"""`python -m architectures <design> --key value ...`: run one design without Sacred, e.g.
`python -m architectures actor_learner --num_workers 2 --total_env_steps 20000`."""

import signal
import sys

# First thing: a run started with `&` from a script inherits SIGINT ignored, and a Ctrl-C during the
# imports below would be lost too (architectures/cli.py main sets it again for callers of main()).
signal.signal(signal.SIGINT, signal.default_int_handler)

from architectures import ARCHITECTURES  # noqa: E402
from architectures.cli import main

if len(sys.argv) < 2 or sys.argv[1] not in ARCHITECTURES:
    sys.exit(f"usage: python -m architectures <design> [--key value ...]; designs: {', '.join(ARCHITECTURES)}")
main(sys.argv[1], sys.argv[2:])
