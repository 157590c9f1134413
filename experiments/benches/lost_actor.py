"""Does losing one Ray actor mid-run (and its replacement) change what actor_learner learns?

    python -m experiments.benches.lost_actor --out results/benchmarks/lost_actor_learning.txt

The `cartpole` named config with the `actor_learner` one (its 100,000 env steps, holdout of 10
episodes every 10,000), 2 actors, `backend=ray` with a private Ray instance per run (empty
`ray_address`) and `actor_restarts=1`. For each evaluation seed 101-105 a pair of runs: without a
loss, and with actor 1 killing itself (SIGKILL, `PDQN_FAULT=1:kill:N`,
architectures/transport/workers.py) once it has made N = 16,667 env steps, about a third of the
run; its replacement carries no fault. Each run is a fresh process, one at a time; within a pair
the order alternates by seed (101: without first, 102: with first, ...). Printed per run: seed,
loss, env steps, actors lost / replaced, env steps undelivered, seconds short, the holdout curve;
then the pre-registered summary. It asserts nothing (tests/test_ray.py holds the behaviour).

PRE-REGISTRATION (written and committed before any run of this script):
- Loss env step L of a pair: the run's env step when actor 1 was lost, taken as num_workers x the
  lost actor's delivered env steps in the loss's message ("died after X env steps"; the learner
  asks both actors for equal shares), or num_workers x N where the message does not say.
- Primary measure per seed: the mean holdout return over the holdout checkpoints at env steps
  >= L (expected: 40k, 50k, ..., 100k), in the run with the loss minus the run without it (the
  same checkpoints for both). Positive: the run with the loss did better.
- Test: exact two-sided Wilcoxon signed-rank over the 5 paired differences
  (scipy.stats.wilcoxon, method="exact", zero differences dropped; if every difference is 0 the
  p-value is reported as 1). Interval: the Hodges-Lehmann estimate (median of the 15 Walsh
  averages) with the exact distribution-free interval [smallest, largest Walsh average], whose
  confidence with 5 pairs is 1 - 2/32 = 93.75%.
- With 5 pairs the smallest attainable two-sided p is 2/32 = 0.0625, so no verdict "differs" is
  possible at 0.05: the result is descriptive. What the seeds could detect: the test reaches
  p = 0.0625 only when all 5 differences share a sign; for normal differences with SD s that
  happens with probability 0.8 when the mean difference is about 1.7 s (Phi(1.71)^5 = 0.8), so the
  summary prints 1.7 x the observed paired SD as the smallest difference these seeds could detect.
- Secondary (descriptive only): final holdout return per run, the mean curves, and the loss's
  cost (actors_lost, actors_replaced, env_steps_undelivered, actor_seconds_short).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from architectures.core.atomic import atomic_write
from experiments.tracking.configs import NAMED_CONFIGS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
SEEDS = (101, 102, 103, 104, 105)
WORKERS = 2
DETECT_FACTOR = 1.7  # Phi(1.71)^5 = 0.8: all five differences share a sign with probability 0.8


def config(seed: int) -> dict:
    values = {**NAMED_CONFIGS["cartpole"], **NAMED_CONFIGS["actor_learner"], "num_workers": WORKERS,
              "seed": seed, "backend": "ray", "ray_address": "", "actor_restarts": 1, "log_every": 10_000}
    values.pop("design")
    return values


def kill_step(total: int) -> int:
    return round(total / WORKERS / 3)


def leftover_ray(driver_pid: int) -> list[int]:
    """Processes of the Ray instance a run's driver started (its session name ends in the driver's pid)."""
    pattern = re.compile(rf"session_[0-9_-]+_{driver_pid}(\D|$)")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if pattern.search(cmd):
            found.append(int(entry))
    return found


def one_run(seed: int, lose: bool) -> dict:
    values = config(seed)
    cmd = [sys.executable, "-m", "architectures", "actor_learner"]
    for key, value in values.items():
        cmd += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    env = dict(os.environ)
    env.pop("PDQN_FAULT", None)
    if lose:
        env["PDQN_FAULT"] = f"1:kill:{kill_step(values['total_env_steps'])}"
    started = time.time()
    # Same process group as this script: pausing this script's group pauses the run too.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    row = {"seed": seed, "loss": lose, "rc": proc.returncode, "wall_s": round(time.time() - started, 1)}
    left = leftover_ray(proc.pid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        row["ray_processes_left_and_killed"] = len(left)
    if proc.returncode != 0 or "{\n" not in out:
        row["failed"] = err.strip().splitlines()[-3:] if err.strip() else "no result on stdout"
        return row
    result = json.loads(out[out.index("{\n"):])
    row.update(env_steps=result["env_steps"], actors_lost=result.get("actors_lost"),
               actors_replaced=result.get("actors_replaced"),
               env_steps_undelivered=result.get("env_steps_undelivered"),
               actor_seconds_short=result.get("actor_seconds_short"),
               final=result["final_holdout_return"],
               curve=[[c["env_steps"], c["return_mean"]] for c in result["holdout_curve"]])
    losses = result.get("actor_losses") or []
    if losses:
        row["loss_why"] = losses[0]["why"]
        said = re.search(r"died after ([\d,]+) env steps", losses[0]["why"])
        row["loss_env_step"] = (WORKERS * int(said.group(1).replace(",", "")) if said
                                else WORKERS * kill_step(values["total_env_steps"]))
    return row


def after(row: dict, step: int) -> float:
    return statistics.mean(r for s, r in row["curve"] if s >= step)


def walsh(diffs: list[float]) -> list[float]:
    return sorted((diffs[i] + diffs[j]) / 2 for i in range(len(diffs)) for j in range(i, len(diffs)))


def wilcoxon_p(diffs: list[float]) -> float:
    from scipy.stats import wilcoxon

    if not any(diffs):
        return 1.0
    try:
        return float(wilcoxon(diffs, zero_method="wilcox", alternative="two-sided", method="exact").pvalue)
    except ValueError:  # scipy refuses (e.g. a single non-zero difference): said as not computed
        return float("nan")


def summary(pairs: dict[int, dict[bool, dict]]) -> list[str]:
    lines = ["", "PRIMARY (pre-registered): mean holdout return over checkpoints >= the loss's env step, "
             "with loss minus without, per seed:"]
    diffs = []
    for seed, pair in pairs.items():
        with_, without = pair.get(True, {}), pair.get(False, {})
        if "curve" not in with_ or "curve" not in without:
            lines.append(f"  seed {seed}: missing a run ({with_.get('failed') or without.get('failed')}); left out")
            continue
        step = with_.get("loss_env_step", WORKERS * kill_step(config(seed)["total_env_steps"]))
        if not with_.get("actors_lost"):
            lines.append(f"  seed {seed}: the 'loss' run recorded no loss (actors_lost={with_.get('actors_lost')}); left out")
            continue
        a, b = after(with_, step), after(without, step)
        checkpoints = [s for s, _ in with_["curve"] if s >= step]
        diffs.append(a - b)
        lines.append(f"  seed {seed}: loss at ~{step:,} env steps, checkpoints {checkpoints[0]:,}-{checkpoints[-1]:,} "
                     f"({len(checkpoints)}): with {a:6.1f}, without {b:6.1f}, difference {a - b:+7.1f}")
    if len(diffs) < 2:
        lines.append("  too few complete pairs for a summary")
        return lines
    averages = walsh(diffs)
    sd = statistics.stdev(diffs)
    lines.append(f"  {len(diffs)} pairs: mean difference {statistics.mean(diffs):+.1f}, Hodges-Lehmann "
                 f"{statistics.median(averages):+.1f}, interval [{averages[0]:+.1f}, {averages[-1]:+.1f}] "
                 f"(smallest to largest Walsh average; {100 * (1 - 2 / 2 ** len(diffs)):.2f}% exact with "
                 f"{len(diffs)} pairs)")
    lines.append(f"  exact two-sided Wilcoxon signed-rank p = {wilcoxon_p(diffs):.4f} (smallest attainable with "
                 f"{len(diffs)} pairs: {2 / 2 ** len(diffs):.4f}; descriptive, no verdict at 0.05 possible)")
    lines.append(f"  paired SD {sd:.1f}: the smallest difference these seeds could detect ~ {DETECT_FACTOR} x SD "
                 f"= {DETECT_FACTOR * sd:.1f} (all five differences of one sign with probability 0.8)")
    lines += ["", "SECONDARY (descriptive): mean holdout return over seeds at each checkpoint:"]
    complete = [pair for pair in pairs.values() if "curve" in pair.get(True, {}) and "curve" in pair.get(False, {})]
    steps = [s for s, _ in complete[0][False]["curve"]]
    lines.append("  env steps    " + " ".join(f"{s:>7,}" for s in steps))
    for lose in (False, True):
        cols = zip(*[[r for _, r in pair[lose]["curve"]] for pair in complete])
        lines.append(f"  {'with loss' if lose else 'no loss':<12} " + " ".join(f"{statistics.mean(c):7.1f}" for c in cols))
    for lose in (False, True):
        finals = [pair[lose]["final"] for pair in complete]
        lines.append(f"  final holdout, {'with loss' if lose else 'no loss'}: "
                     f"{', '.join(f'{v:.1f}' for v in finals)} (mean {statistics.mean(finals):.1f})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write the rows and the summary here")
    args = parser.parse_args(argv)
    total = config(SEEDS[0])["total_env_steps"]
    lines = [f"# {' '.join(['python -m experiments.benches.lost_actor', *(argv if argv is not None else sys.argv[1:])])}",
             f"# started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.2f} at the start; the machine was shared with another learning sweep, and this "
             f"script's process group may have been paused (SIGSTOP/SIGCONT) for minutes while that was measured: "
             f"learning only, no timing here is a speed measurement",
             f"# cartpole + actor_learner named configs, {total:,} env steps, {WORKERS} Ray actors, actor_restarts=1, "
             f"loss: PDQN_FAULT=1:kill:{kill_step(total)}; seeds {', '.join(map(str, SEEDS))}"]
    for line in lines:
        print(line, flush=True)

    def write(extra: list[str]) -> None:
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            atomic_write(args.out, ("\n".join(lines + extra) + "\n").encode())

    pairs: dict[int, dict[bool, dict]] = {}
    for k, seed in enumerate(SEEDS):
        pairs[seed] = {}
        for lose in ((False, True) if k % 2 == 0 else (True, False)):
            row = one_run(seed, lose)
            pairs[seed][lose] = row
            lines.append(json.dumps(row))
            print(lines[-1], flush=True)
            write([])
    lines.append(f"# finished {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    told = summary(pairs)
    lines += told
    print("\n".join([lines[-len(told) - 1], *told]), flush=True)
    write([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
