"""`python -m architectures <design> --key value ...`: run one design without Sacred, e.g.
`python -m architectures actor_learner --num_workers 2 --total_env_steps 20000`."""

import sys

from architectures import ARCHITECTURES
from architectures.cli import main

if len(sys.argv) < 2 or sys.argv[1] not in ARCHITECTURES:
    sys.exit(f"usage: python -m architectures <design> [--key value ...]; designs: {', '.join(ARCHITECTURES)}")
main(sys.argv[1], sys.argv[2:])
