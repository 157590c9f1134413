"""actor_learner past the learner's bound: env steps/s and the learner's update cost against the
number of actors, on an env that waits, this checkout beside another (docs/plan-and-cost-model.md).

    git worktree add ../old-checkout 137848d
    python -m experiments.benches.collapse --actors 4 8 12 16 --rounds 1 --baseline ../old-checkout

The env is the issue's user env, CartPole plus a plain 2 ms `time.sleep` per step, as a user
writes it (experiments/benches/waits/shape_envs.py, found through PYTHONPATH, so a checkout from
before `env_step_wait_us` runs it too); the learner an MLP 256-256 at batch 128, utd 0.25. Every
run is a fresh process, one at a time, evaluation off; within a round the two checkouts alternate
which goes first. Each line is one run: env steps/s, the learner's update in microseconds as the
run paid it, and the role its time breakdown names as the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from experiments.benches.parallel import design_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
ENVS = os.path.join(ROOT, "experiments", "benches", "waits")
SHAPE = dict(env_id="shape_envs:Waits2ms-v0", hidden_sizes=[256, 256], batch_size=128, utd=0.25, buffer_size=50_000,
             learning_starts=1_000, eval_episodes=0, worker_timeout_s=120)


def run(root: str, actors: int, steps: int) -> dict:
    values = {**SHAPE, "total_env_steps": steps, "eval_every": steps, "log_every": steps, "num_workers": actors}
    cmd = design_command("actor_learner", root)
    for key, value in values.items():
        cmd += [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    env = {**os.environ, "PYTHONPATH": ENVS}
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"actor_learner ({actors}) in {root} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actors", type=int, nargs="+", default=[4, 8, 12, 16, 24])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=16_000)
    parser.add_argument("--baseline", metavar="DIR", help="also run from the checkout in DIR")
    args = parser.parse_args(argv)
    roots = {"this": ROOT, **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {})}
    for r in range(args.rounds):
        for n in args.actors:
            order = list(roots) if (r + n) % 2 == 0 else list(reversed(roots))
            for who in order:
                result = run(roots[who], n, args.steps)
                update = result["time_breakdown"]["update"]["us_per_call"]
                print(json.dumps({"who": who, "actors": n, "round": r, "env_steps_per_sec": round(result["env_steps_per_sec"]),
                                  "update_us": round(update), "bound": (result.get("bottleneck") or {}).get("summary"),
                                  "cores_busy": round((result.get("cpu") or {}).get("cores_busy", float("nan")), 2)}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
