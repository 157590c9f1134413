"""A measured plan for this machine: which design, how many workers, how many torch threads.

    python -m experiments.plan                                           # CartPole, the default config
    python -m experiments.plan with cartpole env_step_cost_us=1000
    python -m experiments.plan with env_id=my_envs:MyEnv-v0 hidden_sizes=[256,256] --out results/plan-mine

For the env and learner config given (Sacred's `with` syntax, as `experiments.train` takes it):
1. measures every component the designs are built of, warm and alone, with spread
   (experiments/components/measure.py), and the update at 1 .. min(cores, 4) torch threads;
2. predicts env steps/s for every design at 1 .. cores workers and at 2 x cores (marked
   oversubscribed where the busy processes outnumber the cores) with analysis/cost/model.py,
   naming the role that bounds each point, each with its interval (every cost at its p90 and at its
   p10 over its repeats), widened where other processes shared the cores (experiments/plan/watch.py:
   said in one line and in plan.json `window`); where the env waits (`env_step_wait_us`), past the
   cores too, up to 64 workers or one count past where the learner bounds;
   `--workers N ...` adds counts of the user's own (every design at each, interval included: the
   counts a sweep will run), which plan's recommendation does not choose from;
   where CUDA is present, the learner on CUDA too, in single_env's loop as a run pays it
   (experiments/plan/devices.py), and every design predicted with the learner on each device;
   the env step's wall time against its CPU time, so an env of the user's own that blocks on
   something outside the process is modelled as a wait with no config key;
3. recommends a design, a worker count, the learner's device and torch threads, with the predicted
   gain over single_env, and confirms it: the recommended point and the runner-up run for real
   (short runs, evaluation off, one at a time, each in a fresh process), predicted beside
   measured; the learner's threads are measured in place, the recommended run at
   learner_threads 1 and 2 (an isolated update 16% faster at 2 threads measured no faster in a
   run: 775 against 772 env steps/s);
4. writes plan.json (per design and worker count `predicted_env_steps_per_sec` and
   `bottleneck`; per confirmed run `measured_env_steps_per_sec`; the component costs; the host)
   and plan.png (the predicted curves with the measured points) into --out.
About 2 minutes on a 2-core machine with the default budget and a fast env, longer with a slow
one: it times the env step first and prints its estimate (estimate_seconds). Bad config input
stops it before any measurement, with one line naming the key (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from experiments.plan.confirm import confirm
from experiments.plan.measure import (CONFIRM_RUNS, CONFIRM_START_S, FIXED_ENV_STEPS, FIXED_SECONDS,  # noqa: F401
                                      MEASURE_CORES, on_cores, update_threads, env_step_seconds, estimate_seconds)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def _config(tokens: list[str]):
    from architectures.core.config import DQNConfig
    from experiments.tracking.configs import algorithm_values, resolve
    from experiments.sweeps.grid import Overrides

    overrides = Overrides.parse(tokens)
    values = resolve(overrides.named, overrides.updates)
    return DQNConfig.from_dict(algorithm_values(values)), overrides  # the plan weighs every design


def _figure(path: str, predictions, confirmed: list[dict], title: str, spread: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.cost.model import DESIGNS
    from analysis.report import PALETTE

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    base = next(p for p in predictions if p.design == "single_env").env_steps_per_sec
    ax.axhline(base, color=PALETTE["single_env"], lw=1, label="single_env (predicted)")
    for design in DESIGNS[1:]:  # the parallel designs the cost model predicts
        points = sorted((p.workers, p.env_steps_per_sec, p.oversubscribed) for p in predictions if p.design == design)
        ax.plot([w for w, _, _ in points], [v for _, v, _ in points], marker="o", ms=3, color=PALETTE[design],
                label=f"{design} (predicted)")
        ax.fill_between([w for w, _, _ in points], [spread[(design, w)][0] for w, _, _ in points],
                        [spread[(design, w)][1] for w, _, _ in points], color=PALETTE[design], alpha=0.15, lw=0)
        over = [(w, v) for w, v, o in points if o]
        ax.scatter([w for w, _ in over], [v for _, v in over], facecolors="none", edgecolors=PALETTE[design], s=60)
    for c in confirmed:
        ax.scatter([c["workers"]], [c["measured_env_steps_per_sec"]], marker="*", s=140, zorder=5,
                   color=PALETTE[c["design"]], edgecolors="black", label=f"{c['design']} ({c['workers']}) measured")
    ax.set_xlabel("workers (open circles: more processes than cores)")
    ax.set_ylabel("env steps/s")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    import io

    from architectures.core.atomic import atomic_write

    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    atomic_write(path, image.getvalue())  # whole or not at all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.plan", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s [--out DIR] [--budget S] [--no-confirm] [--workers N ...] "
                                           "[with NAMED ... KEY=VALUE ...]")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "plan"), help="default: results/plan")
    parser.add_argument("--budget", type=float, default=40.0, help="seconds for the component measurements (default 40)")
    parser.add_argument("--confirm-seconds", type=float, default=15.0, help="length of each confirming run (default 15)")
    parser.add_argument("--no-confirm", action="store_true", help="predict only")
    parser.add_argument("--workers", type=int, nargs="+", default=[], metavar="N",
                        help="also predict every design at these worker counts (e.g. the ones a sweep will run)")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the config and the env, say what would be measured and how long it would take, stop")
    argv = list(sys.argv[1:] if argv is None else argv)
    tokens: list[str] = []
    if "with" in argv:
        argv, tokens = argv[:argv.index("with")], argv[argv.index("with") + 1:]
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.workers):
        parser.error(f"--workers: counts must be >= 1 (got {' '.join(map(str, args.workers))})")
    from architectures.core.config import ConfigError
    from architectures.core.envs import env_spec

    try:
        cfg, overrides = _config(tokens)
        env_spec(cfg.env_id)
    except (ConfigError, ValueError) as err:
        parser.exit(2, f"error: {err}\n")
    if args.dry_run:
        from experiments.plan.devices import learner_devices

        step_s = env_step_seconds(cfg)
        print(f"plan for {overrides.text() or 'the default config (CartPole-v1)'}: the learner on "
              f"{' and '.join(learner_devices())}, the env step {1e6 * step_s:,.0f} us here, about "
              f"{estimate_seconds(step_s, args.budget, 0 if args.no_confirm else args.confirm_seconds) / 60:.0f} min; "
              f"would write {args.out}/plan.json (dry run: nothing measured)", file=sys.stderr)
        return 0
    existed = os.path.isdir(args.out)
    try:
        return _plan(args, cfg, overrides)
    except Exception as err:  # noqa: BLE001 - one line naming the measurement; the traceback to a log
        log = _traceback_log()
        if not existed and os.path.isdir(args.out) and not os.listdir(args.out):
            os.rmdir(args.out)  # made for this plan, and nothing in it
        said, step = " ".join(str(err).split()) or type(err).__name__, failed_step(err)
        kept = "plan.json written, plan.png not" if step == MEASUREMENTS["_figure"] else "nothing written"
        print(f"error: plan: {step} failed: {said}; {kept} to {args.out} (traceback: {log})", file=sys.stderr)
        return 1


MEASUREMENTS = {
    "env_costs": "measuring the env step", "env_wait": "measuring the env's wait",
    "acting_costs": "measuring acting (a greedy action, the n-step fold, the replay store)",
    "learning_costs": "measuring sampling and the update", "hand_off_costs": "measuring the shared-memory hand-off",
    "rollout_costs": "measuring pqn's learning", "vector_costs": "measuring AsyncVectorEnv's round trip",
    "in_loop": "measuring single_env's loop", "design_in_loop": "measuring hogwild's loop",
    "shared_roles": "measuring actor_learner's roles sharing the cores",
    "waiting_roles": "measuring actor_learner's roles where the env waits",
    "contention": "measuring single_env's loop beside co-runners", "update_threads": "timing the update by torch threads",
    "confirm": "a confirming run", "_figure": "drawing plan.png", "env_step_seconds": "timing the env step",
}
"""The function a failure happened in (the innermost of these on its traceback) -> what plan was doing."""


def failed_step(err: BaseException) -> str:
    """What plan was doing when `err` was raised: the innermost step of MEASUREMENTS on its traceback."""
    import traceback

    frames = [frame.name for frame in traceback.extract_tb(err.__traceback__)]
    return next((MEASUREMENTS[name] for name in reversed(frames) if name in MEASUREMENTS), "planning")


def _traceback_log() -> str:
    """The current exception's traceback, written to a log file of its own; returns its path."""
    import tempfile
    import traceback

    fd, path = tempfile.mkstemp(prefix="plan-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write(traceback.format_exc())
    return path


def _stages(started: float, expected_s: float, confirming: bool, in_place: bool):
    """A printer of plan's measurements as `[k/N] what (about T left)`: which one it is in, and the
    time its estimate leaves, so minutes of measuring never look like a hang."""
    total = 3 + confirming + in_place
    done = [0]

    def stage(what: str) -> None:
        done[0] += 1
        left = max(0.0, expected_s - (time.monotonic() - started))
        said = f"{left:.0f} s" if left < 120 else f"{left / 60:.0f} min"
        print(f"[{min(done[0], total)}/{total}] {what} (about {said} left)", file=sys.stderr, flush=True)

    return stage


def with_counts(predictions: list, costs: dict, asked: list[int], **kwargs) -> list:
    """`predictions` and every design at each `asked` worker count they lack (`--workers`), in the
    cost model's design order: predict_all stops a design's counts where more workers stop paying,
    and a sweep that runs past that point needs its prediction there too."""
    from analysis.cost.model import DESIGNS, predict_all

    if not asked:
        return predictions
    have = {(p.design, p.workers) for p in predictions}
    extra = [p for p in predict_all(costs, workers=sorted(set(asked)), **kwargs) if (p.design, p.workers) not in have]
    return sorted(predictions + extra, key=lambda p: (DESIGNS.index(p.design), p.workers))


def _plan(args, cfg, overrides) -> int:
    from analysis.cost.model import MissingCosts, intervals, learner_ceiling, medians, predict_all, recommend
    from architectures.core.limits import available_cores
    from experiments.components.measure import measure
    from experiments.tracking.host import cpu_model
    from experiments.plan.devices import learner_devices, measure_devices
    from experiments.plan.watch import LoadWatch, disturbance, disturbance_line

    cores = available_cores()
    started = time.monotonic()
    watch = LoadWatch()  # who else used the cores while plan measured
    what = overrides.text() or "the default config (CartPole-v1)"
    print(f"plan for {what} on {cores} cores ({cpu_model()})", file=sys.stderr)
    step_s = env_step_seconds(cfg)
    expected_s = estimate_seconds(step_s, args.budget, 0 if args.no_confirm else args.confirm_seconds)
    print(f"the env step takes {1e6 * step_s:,.0f} us here: expect about {expected_s / 60:.0f} min", file=sys.stderr)
    stage = _stages(started, expected_s, confirming=not args.no_confirm, in_place=not args.no_confirm and cores > 1)
    measured_on = min(cores, MEASURE_CORES)  # its measurements' processes, and time, do not grow with the cores
    stage("measuring components, each warm and alone" + (f" (on {measured_on} of the {cores} cores; the model "
                                                          "scales to all)" if measured_on < cores else "") + ":")
    with on_cores(measured_on):
        costs = measure(cfg, cores=measured_on, budget_s=args.budget, log=lambda line: print(line, file=sys.stderr))
        stage("the learner on each device it has")
        by_device = measure_devices(cfg, costs, learner_devices(), args.budget * 0.1,
                                    lambda line: print(line, file=sys.stderr))
        stage("the update at each torch thread count")
        threads = update_threads(cfg, measured_on)
    best_threads = min(threads, key=threads.get) if threads else 1
    if 1 not in threads or threads[best_threads] > 0.9 * threads[1]:
        best_threads = 1  # under 10% faster is not worth a core the actors could use
    print("  update by torch threads: " + ", ".join(f"{t}: {us:,.0f} us" for t, us in threads.items()), file=sys.stderr)
    per_device = {device: predict_all(medians(c), utd=cfg.utd, cores=cores, weight_sync_period=cfg.weight_sync_period)
                  for device, c in by_device.items()}
    device = max(per_device, key=lambda d: recommend(per_device[d])[0].env_steps_per_sec)
    best, runner_up = recommend(per_device[device])  # from plan's own counts, not the ones asked for
    predictions = with_counts(per_device[device], medians(by_device[device]), args.workers, utd=cfg.utd, cores=cores,
                              weight_sync_period=cfg.weight_sync_period)
    window = disturbance(watch.other_cores(), cores)
    spread = intervals(by_device[device], predictions, utd=cfg.utd, cores=cores,
                       weight_sync_period=cfg.weight_sync_period)
    spread = {key: (low, high * window["widen_fast_end_by"]) for key, (low, high) in spread.items()}
    base = per_device["cpu"][0].env_steps_per_sec  # single_env with its learner on the CPU
    if device != "cpu":
        print(f"the learner on {device}: predicted {best.env_steps_per_sec:,.0f} env steps/s against "
              f"{recommend(per_device['cpu'])[0].env_steps_per_sec:,.0f} on the CPU", file=sys.stderr)
        cfg = cfg.replace(device=device)
    confirmed = []
    if not args.no_confirm:
        stage(f"confirming: {best.design} ({best.workers}) and {runner_up.design} ({runner_up.workers}), "
              f"~{args.confirm_seconds:.0f} s each, one at a time")
        for p in (best, runner_up):
            confirmed.append(confirm(cfg, p.design, p.workers, p.env_steps_per_sec, args.confirm_seconds, costs,
                                     cores))
    in_place = {}
    if not args.no_confirm and cores > 1 and best.design != "hogwild":
        # The learner's threads, measured in place: the recommended run at 1 and 2 learner threads
        # (actors keep one each); an isolated update's speed-up did not carry into a parallel run.
        stage(f"learner threads in place: {best.design} ({best.workers}) at learner_threads 1 and 2")
        for threads in (1, 2):
            in_place[threads] = confirm(cfg.replace(learner_threads=threads), best.design, best.workers,
                                        best.env_steps_per_sec, args.confirm_seconds, costs, cores)
        speeds = {t: r["measured_env_steps_per_sec"] for t, r in in_place.items()}
        learner_threads = 2 if speeds[2] > 1.05 * speeds[1] else 1  # under 5% is within a run's noise
        print(f"  learner_threads 1: {speeds[1]:,.0f}, 2: {speeds[2]:,.0f} env steps/s -> learner_threads="
              f"{learner_threads}", file=sys.stderr)
    else:
        learner_threads = best_threads
    # ------------------------------------------------------------------ the table
    said = disturbance_line(window)
    if said:
        print(said, file=sys.stderr)
    print(f"\n{'design':<14} {'workers':>7} {'predicted env steps/s':>22} {'[p90, p10 costs]':>20} "
          f"{'x single_env':>12}  bottleneck")
    for p in predictions:
        mark = " (oversubscribed)" if p.oversubscribed else ""
        low, high = spread[(p.design, p.workers)]
        print(f"{p.design:<14} {p.workers:>7} {p.env_steps_per_sec:>22,.0f} {f'[{low:,.0f}, {high:,.0f}]':>20} "
              f"{p.env_steps_per_sec / base:>11.2f}x  {p.bottleneck}{mark}")
    print(f"\nrecommended: {best.design} with {best.workers} worker(s), the learner on {device}, "
          f"learner_threads={learner_threads} (actors and "
          f"workers 1; an isolated update was fastest at {best_threads}): predicted "
          f"{best.env_steps_per_sec:,.0f} env steps/s, {best.env_steps_per_sec / base:.2f}x single_env "
          f"({base:,.0f}); bound by {best.bottleneck}")
    print(f"runner-up:   {runner_up.design} with {runner_up.workers} worker(s): predicted "
          f"{runner_up.env_steps_per_sec:,.0f} env steps/s")
    try:  # one learner, busy all the time: past this rate more actors add nothing
        ceiling, parts = learner_ceiling(medians(by_device[device]), utd=cfg.utd,
                                         weight_sync_period=cfg.weight_sync_period)
        print(f"the learner's ceiling: {ceiling:,.0f} env steps/s = 1 / ("
              + " + ".join(f"{name} {us:,.1f}" for name, us in parts.items())
              + f" us per env step at utd {cfg.utd:g})")
    except MissingCosts as missing:
        ceiling, parts = None, {}
        print(f"the learner's ceiling: not computed ({missing})")
    for c in confirmed:
        error = c["measured_env_steps_per_sec"] / c["predicted_for_this_run"] - 1
        print(f"confirmed:   {c['design']} ({c['workers']}, {c['env_steps']:,} env steps with its first "
              f"{min(cfg.learning_starts, c['env_steps'] // 10):,} unlearned): predicted {c['predicted_for_this_run']:,.0f}, "
              f"measured {c['measured_env_steps_per_sec']:,.0f} env steps/s ({error:+.0%})")
    plan = {
        "config": cfg.to_dict(), "overrides": overrides.text(), "cores": cores, "measured_on_cores": measured_on,
        "host": {"cpu": cpu_model(), "python": platform.python_version(),
                 "node": platform.node()},
        "component_costs_us": costs, "update_us_by_threads": threads,
        "predictions": [{"design": p.design, "workers": p.workers, "predicted_env_steps_per_sec": p.env_steps_per_sec,
                         "interval": list(spread[(p.design, p.workers)]),
                         "bottleneck": p.bottleneck, "oversubscribed": p.oversubscribed, "role_rates": p.rates}
                        for p in predictions],
        "workers_asked": sorted(set(args.workers)),
        "interval": "each prediction with every component cost at its 90th and at its 10th percentile over its "
                    "repeats; where other processes shared the machine (`window`), the fast end widened",
        "window": window,
        "learner_threads_in_place": {str(t): r["measured_env_steps_per_sec"] for t, r in in_place.items()},
        "learner_devices": {d: {"costs_us": {k: by_device[d][k] for k in ("sample", "update")},
                                "predictions": [{"design": p.design, "workers": p.workers,
                                                 "predicted_env_steps_per_sec": p.env_steps_per_sec,
                                                 "bottleneck": p.bottleneck} for p in preds]}
                            for d, preds in per_device.items()},
        "recommended": {"design": best.design, "workers": best.workers, "device": device,
                        "torch_threads": best_threads,
                        "learner_threads": learner_threads, "actor_threads": 1,
                        "predicted_env_steps_per_sec": best.env_steps_per_sec,
                        "predicted_gain_over_single_env": best.env_steps_per_sec / base},
        "runner_up": {"design": runner_up.design, "workers": runner_up.workers,
                      "predicted_env_steps_per_sec": runner_up.env_steps_per_sec},
        "learner_ceiling": {"env_steps_per_sec": ceiling, "us_per_env_step": parts},
        "confirmed": confirmed, "seconds": time.monotonic() - started,
    }
    from architectures.core.atomic import atomic_write

    os.makedirs(args.out, exist_ok=True)  # only now: a plan that fails leaves no folder behind
    atomic_write(os.path.join(args.out, "plan.json"), json.dumps(plan, indent=1).encode())
    _figure(os.path.join(args.out, "plan.png"), predictions, confirmed, f"plan: {what} on {cores} cores"
            + (" (measured beside other work)" if window["disturbed"] else ""), spread)
    print(f"\nwrote {args.out}/plan.json and plan.png in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
