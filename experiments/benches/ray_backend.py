"""actor_learner on Ray against the local (shared-memory) backend: learning and hand-off cost.

    python -m experiments.benches.ray_backend                                  # cartpole, 2 actors, seeds 1-3
    python -m experiments.benches.ray_backend --steps 50000 --seeds 5 --json out.json --text out.txt

Both backends run the `cartpole` named config with the `actor_learner` one (2 actors) at equal
env steps, seed by seed, alternating which goes first, each in a fresh process
(`python -m architectures actor_learner --backend ...`; the Ray runs start a local Ray instance
with this machine's cores and shut it down after). Printed: the final holdout return per seed,
the mean holdout return at every checkpoint, env steps per second of training time (start-up,
including Ray's, and evaluation excluded), and the hand-off cost per transition on each side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from experiments.tracking.configs import NAMED_CONFIGS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
BACKENDS = ("local", "ray")


def run(backend: str, steps: int, seed: int, workers: int) -> dict:
    values = {**NAMED_CONFIGS["cartpole"], **NAMED_CONFIGS["actor_learner"], "total_env_steps": steps,
              "num_workers": workers, "seed": seed, "backend": backend, "log_every": 5_000}
    values.pop("design")
    cmd = [sys.executable, "-m", "architectures", "actor_learner"]
    for key, value in values.items():
        cmd += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"backend={backend} seed={seed} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def report(results: dict[str, list[dict]], steps: int, workers: int) -> str:
    lines = [f"actor_learner, cartpole named config, {workers} actors, {steps:,} env steps, "
             f"{os.cpu_count()} CPUs, seeds {', '.join(str(r['seed']) for r in results['local'])}", ""]
    lines.append("final holdout return (mean of 10 holdout episodes) per seed:")
    for backend in BACKENDS:
        finals = [r["final_holdout_return"] for r in results[backend]]
        lines.append(f"  {backend:>5}: {', '.join(f'{v:6.1f}' for v in finals)}   mean {statistics.mean(finals):6.1f}")
    lines += ["", "mean holdout return over seeds at each checkpoint:",
              "  env steps " + " ".join(f"{c['env_steps']:>7,}" for c in results["local"][0]["holdout_curve"])]
    for backend in BACKENDS:
        curves = [[c["return_mean"] for c in r["holdout_curve"]] for r in results[backend]]
        lines.append(f"  {backend:>9} " + " ".join(f"{statistics.mean(col):7.1f}" for col in zip(*curves)))
    lines += ["", "throughput and hand-off (median over seeds; per-seed values in brackets):"]
    for backend in BACKENDS:
        rs = results[backend]
        speed = [r["env_steps_per_sec"] for r in rs]
        lines.append(f"  {backend:>5}: {statistics.median(speed):7,.0f} env steps/s "
                     f"[{', '.join(f'{v:,.0f}' for v in speed)}], start-up {statistics.median(r['startup_seconds'] for r in rs):.1f} s")
        handoff = {key: statistics.median(r["handoff_us_per_transition"][key] for r in rs)
                   for key in rs[0]["handoff_us_per_transition"]}
        parts = ", ".join(f"{key.replace('_', ' ')} {value:.1f}" for key, value in handoff.items() if key != "total")
        totals = ", ".join(f"{r['handoff_us_per_transition']['total']:.1f}" for r in rs)
        lines.append(f"         hand-off {handoff['total']:.1f} us/transition ({parts}) [totals {totals}]")
        lines.append(f"         policy lag mean {statistics.median(r['policy_lag']['mean'] for r in rs):.0f} updates, "
                     f"acting weights {statistics.median(r['acting_staleness']['mean'] for r in rs):.0f} updates old "
                     f"at hand-off; realised utd {statistics.median(r['realised_utd'] for r in rs):.4f}")
        lines.append(f"         bottleneck (seed {rs[0]['seed']}): {rs[0]['bottleneck']['summary']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per run (the same for both backends)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="write every run's result dict here")
    parser.add_argument("--text", help="write the printed summary here too")
    args = parser.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        parser.exit(2, "error: backend=ray needs Ray, which is not installed: pip install -e '.[ray]'\n")
    results: dict[str, list[dict]] = {backend: [] for backend in BACKENDS}
    for seed in range(1, args.seeds + 1):
        for backend in (BACKENDS if seed % 2 else BACKENDS[::-1]):  # alternate who goes first
            r = run(backend, args.steps, seed, args.workers)
            r["seed"] = seed
            results[backend].append(r)
            print(f"seed {seed} {backend:>5}: final holdout {r['final_holdout_return']:6.1f}, "
                  f"{r['env_steps_per_sec']:,.0f} env steps/s, hand-off "
                  f"{r['handoff_us_per_transition']['total']:.1f} us/transition", file=sys.stderr, flush=True)
    text = report(results, args.steps, args.workers)
    print(text)
    if args.text:
        with open(args.text, "w") as f:
            f.write(f"$ python -m experiments.benches.ray_backend {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
                    f"{text}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
