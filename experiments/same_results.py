"""Do two checkouts learn the same, bit for bit? A refactor's check.

    python -m experiments.same_results --baseline ../old-checkout
    python -m experiments.same_results --baseline ../old-checkout --designs single_env high_utd

Runs each design on a small fixed config, seed and all, once in this checkout and once in the
checkout at --baseline (each in a fresh process, with that checkout's own code), recording every
scalar the run logs but its speed, and its result but the timings. Prints one line per case and
exits 1 if any differs. Only designs that run in one process can be compared this way: a
multi-process design's interleaving is the OS's, so its runs differ between two runs of one
checkout too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = {"total_env_steps": 8_000, "eval_every": 2_000, "eval_episodes": 5, "learning_starts": 500, "log_every": 500}
CASES = {
    "single_env": [dict(BASE, seed=3)],
    "high_utd": [dict(BASE, seed=4, total_env_steps=6_000, utd=4.0, layer_norm=True, reset_period=2_000,
                      reset_layers="all"),
                 dict(BASE, seed=5, total_env_steps=4_000, utd=2.0, reset_period=1_500, log_every=250)],
}
TIMING = ("seconds", "per_sec", "costs_us", "time_breakdown", "timed_fraction", "cpu", "bottleneck", "startup")
"""Result keys (by part of their name) that measure time, which no two runs share."""

# Runs inside the checkout under test; finds the design where that checkout keeps it.
FINGERPRINT = """
import importlib, json, sys
design, values, timing = sys.argv[1], json.loads(sys.argv[2]), tuple(json.loads(sys.argv[3]))
try:
    from architectures.core.config import DQNConfig
    from architectures.core.metrics import NullReporter
    module = importlib.import_module("architectures.designs." + design)
except ImportError:  # a checkout from before the package was laid out by role
    from architectures.config import DQNConfig
    from architectures.metrics import NullReporter
    module = importlib.import_module("architectures." + design)

class Recorder(NullReporter):
    def __init__(self):
        self.rows = []
    def scalar(self, name, value, step):
        if "per_sec" not in name:
            self.rows.append([name, step, float(value)])

recorder = Recorder()
result = module.train(DQNConfig(**values), recorder)
json.dump({"scalars": recorder.rows,
           "result": {k: v for k, v in result.items() if not any(t in k for t in timing)}}, sys.stdout)
"""


def fingerprint(root: str, design: str, values: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", FINGERPRINT, design, json.dumps(values), json.dumps(TIMING)],
                          cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{design} failed in {root}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, metavar="DIR", help="the other checkout of this suite")
    parser.add_argument("--designs", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    if not os.path.isdir(os.path.join(args.baseline, "architectures")):
        parser.error(f"--baseline: {args.baseline!r} is not a checkout of this suite (no architectures/)")
    differ = 0
    for design in args.designs:
        for values in CASES[design]:
            mine, theirs = fingerprint(ROOT, design, values), fingerprint(args.baseline, design, values)
            keys = sorted(k for k in set(mine["result"]) | set(theirs["result"])
                          if mine["result"].get(k) != theirs["result"].get(k))
            same = mine == theirs
            differ += not same
            print(f"{design} {json.dumps(values, sort_keys=True)}: {len(mine['scalars'])} logged scalars and "
                  f"{len(mine['result'])} result fields {'identical' if same else 'DIFFER'}"
                  + (f" (result fields: {', '.join(keys)})" if keys else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
