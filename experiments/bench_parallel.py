"""Side-by-side throughput of the parallel architectures against single_env, on this machine.

    python -m experiments.bench_parallel                      # env_step_cost_us 1000 and 0, 3 rounds
    python -m experiments.bench_parallel --costs 1000 --rounds 5 --steps 30000
    python -m experiments.bench_parallel --costs 0 --archs single_env actor_learner --baseline ../old-checkout
    python -m experiments.bench_parallel --named cartpole --costs 0 --archs single_env actor_learner pqn

Every run is a fresh process (`python -m architectures <name>`), the contenders alternate
within each round so drifting machine load hits all of them alike, and the speed-ups are
ratios taken within a round. Throughput is env steps per second of training time (start-up
and evaluation excluded; evaluation is off). Each parallel run also reports where its time
went, the bottleneck, the age of the data it learned from (its `policy_lag`: learner updates
between a transition's acting weights and its sampling) and the hand-off cost per transition.

With `--named ENV` each design runs as the sweeps run it: the env's named config, then the design's
own (its worker count, and pqn's learner: LayerNorm, RAdam, its rollouts), as `experiments.configs.resolve`
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    from experiments.configs import NAMED_CONFIGS, resolve

    values = resolve([named] + ([arch] if arch in NAMED_CONFIGS else []), {})
    defaults = DQNConfig().to_dict()
    return {k: v for k, v in values.items() if k in defaults and v != defaults[k]} | {"eval_episodes": 0}


def run(arch: str, steps: int, cost: float, workers: int | None, seed: int, root: str = ROOT,
        named: str | None = None) -> dict:
    values = {**design_values(arch, named), "total_env_steps": steps, "eval_every": steps, "env_step_cost_us": cost,
              "seed": seed}
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
    parser.add_argument("--workers", type=int, help="every parallel design's count (default 2, or with --named "
                        "each design's named count)")
    parser.add_argument("--named", metavar="ENV", help="run each design as the sweeps do: this env's named "
                        "config and the design's (cartpole, minatar_breakout_cpu)")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per run at cost > 0")
    parser.add_argument("--cheap-steps", type=int, default=50_000, help="env steps per run at cost 0")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--archs", nargs="+", default=["single_env", "actor_learner", "vector_env"])
    parser.add_argument("--json", help="write every run's result here")
    parser.add_argument("--baseline", metavar="DIR", help="also run every design from the checkout in DIR")
    args = parser.parse_args(argv)
    if "single_env" not in args.archs:
        parser.error("--archs must include single_env (the baseline of every ratio)")
    if args.named:
        from experiments.configs import NAMED_CONFIGS
        if args.named not in NAMED_CONFIGS:
            parser.error(f"--named: {args.named!r} is not a named config ({', '.join(NAMED_CONFIGS)})")
    elif args.workers is None:
        args.workers = 2
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "experiments", "bench_parallel.py")):
        parser.error(f"--baseline: {args.baseline!r} is not a checkout of this suite")
    against: dict[str, list[float]] = {a: [] for a in args.archs}  # this checkout / the baseline's, per round
    learner = f"named {args.named}" if args.named else f"utd {COMMON['utd']}"
    workers_said = f"{args.workers} workers" if args.workers else "each design's named workers"
    print(f"{os.cpu_count()} CPUs; {workers_said}; {learner}; rounds {args.rounds}", flush=True)
    everything = []
    for cost in args.costs:
        steps = args.steps if cost > 0 else args.cheap_steps
        print(f"\n== env_step_cost_us={cost:g}, {steps:,} env steps per run", flush=True)
        ratios: dict[str, list[float]] = {a: [] for a in args.archs if a != "single_env"}
        for round_index in range(args.rounds):
            order = args.archs if round_index % 2 == 0 else list(reversed(args.archs))
            results = {}
            for arch in order:
                workers = 1 if arch == "single_env" else args.workers
                old = None
                if args.baseline and round_index % 2:  # the baseline first in every other round
                    old = run(arch, steps, cost, workers, round_index + 1, root=os.path.abspath(args.baseline),
                              named=args.named)
                results[arch] = run(arch, steps, cost, workers, round_index + 1, named=args.named)
                print(describe(arch, results[arch]), flush=True)
                everything.append({"cost_us": cost, "round": round_index, "arch": arch, "named": args.named,
                                   **results[arch]})
                if args.baseline:
                    if old is None:
                        old = run(arch, steps, cost, workers, round_index + 1, root=os.path.abspath(args.baseline),
                                  named=args.named)
                    against[arch].append(results[arch]["env_steps_per_sec"] / old["env_steps_per_sec"])
                    print(describe(f"{arch} (baseline)", old) + f"  -> this/baseline {against[arch][-1]:.3f}",
                          flush=True)
            base = results["single_env"]["env_steps_per_sec"]
            for arch in ratios:
                ratios[arch].append(results[arch]["env_steps_per_sec"] / base)
            print(f"  round {round_index + 1}: " + ", ".join(f"{a} {r[-1]:.2f}x" for a, r in ratios.items()), flush=True)
        for arch, values in ratios.items():
            print(f"  {arch} / single_env at cost {cost:g} us: median {statistics.median(values):.2f}x "
                  f"(rounds: {', '.join(f'{v:.2f}' for v in values)})")
    for arch, values in against.items():
        if values:
            print(f"{arch}: this checkout / baseline, median {statistics.median(values):.3f} "
                  f"(rounds: {', '.join(f'{v:.3f}' for v in values)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
