"""Does a run that was killed and resumed learn as well as one that was not? Measured, per design.

For each design and seed, one run goes uninterrupted and one is SIGKILLed, whole process group,
once its checkpoint has been written `--kill-after-saves` times, then started again with the
same command and left to finish. Both are the `cartpole` config at 100k env steps, the
designs' named configs, checkpoints at every holdout checkpoint (as sweeps take them). Prints,
per design, each seed's final holdout return and mean holdout return over the checkpoints for
both, and their IQMs with 95% stratified-bootstrap intervals; writes the rows as JSON.

single_env and high_utd resume bit for bit (tests/test_resume.py), so the designs measured by
default are the asynchronous ones, whose resumed workers start fresh episodes.

    python -m experiments.benches.resume --designs actor_learner,vector_env,hogwild --seeds 5
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def _command(design: str, seed: int, checkpoint: str, steps: int) -> list[str]:
    from experiments.tracking.configs import NAMED_CONFIGS

    values = {**NAMED_CONFIGS["cartpole"], **NAMED_CONFIGS[design], "seed": seed, "total_env_steps": steps,
              "checkpoint_every": NAMED_CONFIGS["cartpole"]["eval_every"], "checkpoint_path": checkpoint}
    values.pop("design")
    args = [item for k, v in values.items() for item in (f"--{k}", json.dumps(v) if not isinstance(v, str) else v)]
    return [sys.executable, "-m", "architectures", design, *args]


def _run(cmd: list[str], kill_after_saves: int | None) -> dict:
    """The run's result; with `kill_after_saves`, killed once the checkpoint was written that many
    times, then run again to its end (the result is the resumed run's)."""
    if kill_after_saves:
        checkpoint = cmd[cmd.index("--checkpoint_path") + 1]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        seen, last = 0, None
        while seen < kill_after_saves:
            if proc.poll() is not None:
                raise RuntimeError(f"the run ended before its checkpoint was written {kill_after_saves} times")
            stamp = os.stat(checkpoint).st_mtime_ns if os.path.exists(checkpoint) else None
            if stamp is not None and stamp != last:
                seen, last = seen + 1, stamp
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    from analysis.stats import seeds_summary
    from experiments.sweeps.catalog import SEED_SETS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--designs", default="actor_learner,vector_env,hogwild")
    parser.add_argument("--seeds", type=int, default=5, help="the first N evaluation seeds (default 5)")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--kill-after-saves", type=int, default=4, help="kill once the checkpoint was written N times")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "benchmarks", "resume_learning.json"))
    args = parser.parse_args(argv)
    designs = args.designs.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for design in designs:
            for seed in SEED_SETS["evaluation"][:args.seeds]:
                for resumed in (False, True):
                    cmd = _command(design, seed, os.path.join(tmp, f"{design}-{seed}-{resumed}.pt"), args.steps)
                    r = _run(cmd, args.kill_after_saves if resumed else None)
                    curve = [c["return_mean"] for c in r["holdout_curve"]]
                    rows.append({"design": design, "seed": seed, "resumed": resumed,
                                 "resumed_from_env_steps": r["resumed_from_env_steps"],
                                 "dropped_on_resume": r["dropped_on_resume"], "final": curve[-1],
                                 "mean_over_checkpoints": sum(curve) / len(curve), "curve": curve})
                    print(f"{design:<14} seed {seed} {'resumed' if resumed else 'whole  '}: final {curve[-1]:6.1f}, "
                          f"mean over checkpoints {rows[-1]['mean_over_checkpoints']:6.1f}"
                          + (f" (killed, resumed from {r['resumed_from_env_steps']:,}, dropped "
                             f"{r['dropped_on_resume']})" if resumed else ""), flush=True)
    print()
    for design in designs:
        for key in ("final", "mean_over_checkpoints"):
            parts = []
            for resumed in (False, True):
                s = seeds_summary([x[key] for x in rows if x["design"] == design and x["resumed"] == resumed])
                parts.append(f"{'resumed' if resumed else 'whole'} IQM {s['iqm']:.1f} "
                             f"[{s['iqm_low']:.1f}, {s['iqm_high']:.1f}]")
            print(f"{design:<14} {key:<22} " + "; ".join(parts))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"command": " ".join(["python -m experiments.benches.resume", *(argv or sys.argv[1:])]),
                   "rows": rows}, f, indent=1)
    print(f"\nrows: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
