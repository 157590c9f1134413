"""Side-by-side throughput of the parallel architectures against single_env, on this machine.

    python -m experiments.benches.parallel                      # env_step_cost_us 1000 and 0, 3 rounds
    python -m experiments.benches.parallel --costs 1000 --rounds 5 --steps 30000
    python -m experiments.benches.parallel --costs 0 --archs single_env actor_learner --baseline ../old-checkout
    python -m experiments.benches.parallel --named cartpole --costs 0 --archs single_env actor_learner pqn
    python -m experiments.benches.parallel --costs 0 --wait-us 2000 --workers 4 8 --archs actor_learner vector_env \
        --against actor_learner --rounds 5        # an env that waits 2 ms: vector_env / actor_learner per count

Every run is a fresh process (`python -m architectures <name>`), the contenders alternate
within each round so drifting machine load hits all of them alike, and the speed-ups are
ratios taken within a round, over single_env or the design `--against` names, printed as their
median with their range. With several `--workers` counts every count is a regime of its own.
Throughput is env steps per second of training time (start-up and evaluation excluded;
evaluation is off). Each parallel run also reports where its time
went, the bottleneck, the age of the data it learned from (its `policy_lag`: learner updates
between a transition's acting weights and its sampling) and the hand-off cost per transition.

With `--named ENV` each design runs as the sweeps run it: the env's named config, then the design's
own (its worker count, and pqn's learner: LayerNorm, RAdam, its rollouts), as `experiments.tracking.configs.resolve`
gives them, instead of the cartpole learner below for all; `--workers`, when given, still sets every
parallel design's count (tests/test_bench.py::test_named_runs_each_design_as_the_sweeps_do).

With `--baseline DIR` (a checkout of another commit: `git worktree add ../old-checkout <commit>`)
every design also runs from DIR in the same alternating rounds, and each design's speed in this
checkout over its speed in DIR is printed: how a change moved each design's throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
# The cartpole named config's learner (128-128 MLP, batch 128, one update per 4 env steps).
COMMON = dict(env_id="CartPole-v1", hidden_sizes=[128, 128], batch_size=128, buffer_size=50_000,
              learning_starts=1_000, utd=0.25, n_step=3, eval_episodes=0, log_every=5_000)


def design_command(arch: str, root: str = ROOT) -> list[str]:
    """The command that runs design `arch` without Sacred in the checkout at `root`: `python -m
    architectures <arch>`, or, in a checkout from before the package was laid out by role (a
    --baseline), `python -m architectures.<arch>`."""
    if os.path.isfile(os.path.join(root, "architectures", "__main__.py")):
        return [sys.executable, "-m", "architectures", arch]
    return [sys.executable, "-m", f"architectures.{arch}"]


def design_values(arch: str, named: str | None) -> dict:
    """The config a run takes before its budget: COMMON, or with `named` the sweeps' resolution of the
    env's and the design's named configs (only what differs from DQNConfig's defaults, the CLI's own)."""
    if named is None:
        return dict(COMMON)
    from architectures.core.config import DQNConfig
    from experiments.tracking.configs import NAMED_CONFIGS, resolve

    values = resolve([named] + ([arch] if arch in NAMED_CONFIGS else []), {})
    defaults = DQNConfig().to_dict()
    return {k: v for k, v in values.items() if k in defaults and v != defaults[k]} | {"eval_episodes": 0}


def run(arch: str, steps: int, cost: float, workers: int | None, seed: int, root: str = ROOT,
        named: str | None = None, wait_us: float = 0.0) -> dict:
    values = {**design_values(arch, named), "total_env_steps": steps, "eval_every": steps, "env_step_cost_us": cost,
              "seed": seed}
    if wait_us:
        values["env_step_wait_us"] = wait_us
    if workers is not None:
        values["num_workers"] = workers
    cmd = design_command(arch, root)
    for key, value in values.items():
        cmd += [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{arch} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def describe(arch: str, r: dict) -> str:
    line = f"{arch:>14}: {r['env_steps_per_sec']:8,.0f} env steps/s  {r['updates_per_sec']:7,.0f} updates/s"
    if "bottleneck" in r:
        line += f"  bottleneck: {r['bottleneck']['summary']}"
    if "handoff_us_per_transition" in r:
        h = r["handoff_us_per_transition"]
        line += (f"\n{'':>16}hand-off {h['total']:.1f} us/transition (actor write {h['actor_write']:.1f}, "
                 f"learner drain {h['learner_drain']:.1f}); sampled data's age (policy lag) mean "
                 f"{r['policy_lag']['mean']:.0f} updates")
    return line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--costs", type=float, nargs="+", default=[1000.0, 0.0],
                        help="env_step_cost_us regimes (busy CPU us added to every env step)")
    parser.add_argument("--workers", type=int, nargs="+", help="every parallel design's count, one regime per "
                        "count (default 2, or with --named each design's named count)")
    parser.add_argument("--wait-us", type=float, default=0.0, help="env_step_wait_us of every run (an env step that "
                        "blocks without using the CPU)")
    parser.add_argument("--against", default="single_env", help="the design every ratio is over (one of --archs)")
    parser.add_argument("--named", metavar="ENV", help="run each design as the sweeps do: this env's named "
                        "config and the design's (cartpole, minatar_breakout_cpu)")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per run at cost > 0")
    parser.add_argument("--cheap-steps", type=int, default=50_000, help="env steps per run at cost 0")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--archs", nargs="+", default=["single_env", "actor_learner", "vector_env"])
    parser.add_argument("--json", help="write every run's result here")
    parser.add_argument("--baseline", metavar="DIR", help="also run every design from the checkout in DIR")
    parser.add_argument("--dry-run", action="store_true", help="check the arguments, say what would run, stop")
    args = parser.parse_args(argv)
    if args.against not in args.archs:
        parser.error(f"--archs must include {args.against} (the baseline of every ratio: --against)")
    if args.named:
        from experiments.tracking.configs import NAMED_CONFIGS
        if args.named not in NAMED_CONFIGS:
            parser.error(f"--named: {args.named!r} is not a named config ({', '.join(NAMED_CONFIGS)})")
    elif args.workers is None:
        args.workers = [2]
    if args.dry_run:  # the arguments' forms only: a --baseline checkout need not exist yet
        print(f"bench_parallel: {args.rounds} round(s) of {', '.join(args.archs)} at env step cost(s) "
              f"{', '.join(f'{c:g}' for c in args.costs)} us (dry run: nothing run)", file=sys.stderr)
        return
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "architectures", "__init__.py")):
        parser.error(f"--baseline: {args.baseline!r} is not a checkout of this suite")
    against: dict[str, list[float]] = {a: [] for a in args.archs}  # this checkout / the baseline's, per round
    learner = f"named {args.named}" if args.named else f"utd {COMMON['utd']}"
    workers_said = f"{args.workers} workers" if args.workers else "each design's named workers"
    print(f"{os.cpu_count()} CPUs; {workers_said}; {learner}; env wait {args.wait_us:g} us; rounds {args.rounds}",
          flush=True)
    everything = []
    for cost in args.costs:
        steps = args.steps if cost > 0 or args.wait_us > 0 else args.cheap_steps
        for count in args.workers or [None]:
            print(f"\n== env_step_cost_us={cost:g}, {count or 'named'} workers, {steps:,} env steps per run", flush=True)
            ratios: dict[str, list[float]] = {a: [] for a in args.archs if a != args.against}
            for round_index in range(args.rounds):
                order = args.archs if round_index % 2 == 0 else list(reversed(args.archs))
                results = {}
                for arch in order:
                    workers = 1 if arch in ("single_env", "high_utd") else count
                    same = dict(named=args.named, wait_us=args.wait_us)
                    old = None
                    if args.baseline and round_index % 2:  # the baseline first in every other round
                        old = run(arch, steps, cost, workers, round_index + 1, root=os.path.abspath(args.baseline),
                                  **same)
                    results[arch] = run(arch, steps, cost, workers, round_index + 1, **same)
                    print(describe(arch, results[arch]), flush=True)
                    everything.append({"cost_us": cost, "wait_us": args.wait_us, "workers": count, "round": round_index,
                                       "arch": arch, "named": args.named, **results[arch]})
                    if args.baseline:
                        if old is None:
                            old = run(arch, steps, cost, workers, round_index + 1, root=os.path.abspath(args.baseline),
                                      **same)
                        against[arch].append(results[arch]["env_steps_per_sec"] / old["env_steps_per_sec"])
                        print(describe(f"{arch} (baseline)", old) + f"  -> this/baseline {against[arch][-1]:.3f}",
                              flush=True)
                base = results[args.against]["env_steps_per_sec"]
                for arch in ratios:
                    ratios[arch].append(results[arch]["env_steps_per_sec"] / base)
                print(f"  round {round_index + 1}: " + ", ".join(f"{a} {r[-1]:.2f}x" for a, r in ratios.items()),
                      flush=True)
            for arch, values in ratios.items():
                print(f"  {arch} / {args.against} at cost {cost:g} us, {count or 'named'} workers: "
                      f"{_median_range(values, 'x')}")
    for arch, values in against.items():
        if values:
            print(f"{arch}: this checkout / baseline, {_median_range(values, '')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


def _median_range(values: list[float], unit: str) -> str:
    return (f"median {statistics.median(values):.2f}{unit} (range {min(values):.2f}-{max(values):.2f}; rounds: "
            f"{', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
