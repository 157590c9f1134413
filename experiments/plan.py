"""A measured plan for this machine: which design, how many workers, how many torch threads.

    python -m experiments.plan                                           # CartPole, the default config
    python -m experiments.plan with cartpole env_step_cost_us=1000
    python -m experiments.plan with env_id=my_envs:MyEnv-v0 hidden_sizes=[256,256] --out results/plan-mine

For the env and learner config given (Sacred's `with` syntax, as `experiments.train` takes it):
1. measures every component the designs are built of, warm and alone, with spread
   (experiments/components.py), and the update at 1 .. min(cores, 4) torch threads;
2. predicts env steps/s for every design at 1 .. cores workers and at 2 x cores (marked
   oversubscribed where the busy processes outnumber the cores) with analysis/cost_model.py,
   naming the role that bounds each point; where the env waits (`env_step_wait_us`), past the
   cores too, up to 64 workers or one count past where the learner bounds;
   where CUDA is present, the learner on CUDA too, in single_env's loop as a run pays it
   (experiments/plan_devices.py), and every design predicted with the learner on each device;
   the env step's wall time against its CPU time, so an env of the user's own that blocks on
   something outside the process is modelled as a wait with no config key;
3. recommends a design, a worker count, the learner's device and torch threads, with the predicted
   gain over single_env, and confirms it: the recommended point and the runner-up run for real
   (short runs, evaluation off, one at a time, each in a fresh process), predicted beside
   measured; the learner's threads are measured in place, the recommended run at
   learner_threads 1 and 2 (an isolated update 16% faster at 2 threads measured no faster in a
   run: 775 against 772 env steps/s, issue 21);
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
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config(tokens: list[str]):
    from architectures.core.config import DQNConfig
    from experiments.configs import resolve
    from experiments.sweep_grid import Overrides

    overrides = Overrides.parse(tokens)
    values = resolve(overrides.named, overrides.updates)
    values.pop("architecture", None)  # the plan weighs every design
    return DQNConfig.from_dict(values), overrides


def _last_line(proc: subprocess.CompletedProcess) -> str:
    """A failed child's last line of stderr, or its exit code when it said nothing."""
    return (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}, nothing on stderr"])[-1]


def _threads(cfg, cores: int) -> dict[int, float]:
    """The update's median us at 1 .. min(cores, 4) torch threads, in fresh processes."""
    out = {}
    for threads in range(1, min(cores, 4) + 1):
        code = ("import json, sys; from experiments.plan import _update_us; "
                f"print(json.dumps(_update_us({cfg.to_dict()!r}, {threads})))")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            out[threads] = json.loads(proc.stdout.strip().splitlines()[-1])
        else:  # said, not dropped: the recommendation then keeps 1 thread
            print(f"  update at {threads} torch thread(s) could not be timed: {_last_line(proc)}", file=sys.stderr)
    return out


def _update_us(config: dict, threads: int) -> float:
    import numpy as np
    import torch

    from architectures.core.config import DQNConfig
    from architectures.core.dqn import build_learner
    from architectures.core.envs import env_spec
    from experiments.components_alone import timed

    torch.set_num_threads(threads)
    cfg = DQNConfig.from_dict(config)
    spec = env_spec(cfg.env_id)
    learner = build_learner(spec, cfg)
    rng, b = np.random.default_rng(0), cfg.batch_size
    obs = rng.random((b, *spec.obs_shape)).astype(spec.obs_dtype)
    batch = {"obs": obs, "next_obs": obs.copy(), "action": rng.integers(0, spec.num_actions, b),
             "reward": rng.random(b).astype(np.float32), "discount": np.full(b, 0.99, np.float32)}
    return timed(lambda: learner.update(batch), 30, blocks=5)["us"]


def confirm(cfg, design: str, workers: int, predicted: float, seconds: float, costs: dict, cores: int) -> dict:
    """Run `design` at `workers` for about `seconds` (evaluation off) in a fresh process, and
    predict that very run: its first learning_starts env steps go without updates, so it is
    compared with `over_a_run`, not with the steady state the table shows."""
    steps = int(min(200_000, max(5_000, predicted * seconds)))
    run_cfg = cfg.replace(num_workers=workers, total_env_steps=steps, eval_every=steps, eval_episodes=0,
                          learning_starts=min(cfg.learning_starts, steps // 10), log_every=steps,
                          checkpoint_every=0, checkpoint_path="")
    from analysis.cost_model import medians, over_a_run

    this_run = over_a_run(design, workers, medians(costs), utd=cfg.utd, cores=cores, total_env_steps=steps,
                          learning_starts=run_cfg.learning_starts, weight_sync_period=cfg.weight_sync_period)
    args = [item for k, v in run_cfg.to_dict().items()
            for item in (f"--{k}", json.dumps(v) if not isinstance(v, str) else v) if v != ""]
    proc = subprocess.run([sys.executable, "-m", "architectures", design, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=max(600, 20 * seconds))
    if proc.returncode != 0:
        raise RuntimeError(f"{design} ({workers}) failed: {_last_line(proc)}")
    result = json.loads(proc.stdout)
    return {"design": design, "workers": workers, "env_steps": steps,
            "measured_env_steps_per_sec": result["env_steps_per_sec"], "predicted_env_steps_per_sec": predicted,
            "predicted_for_this_run": this_run,
            "bottleneck_measured": (result.get("bottleneck") or {}).get("summary")}


def _figure(path: str, predictions, confirmed: list[dict], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.cost_model import DESIGNS
    from analysis.report import PALETTE

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    base = next(p for p in predictions if p.design == "single_env").env_steps_per_sec
    ax.axhline(base, color=PALETTE["single_env"], lw=1, label="single_env (predicted)")
    for design in DESIGNS[1:]:  # the parallel designs the cost model predicts
        points = sorted((p.workers, p.env_steps_per_sec, p.oversubscribed) for p in predictions if p.design == design)
        ax.plot([w for w, _, _ in points], [v for _, v, _ in points], marker="o", ms=3, color=PALETTE[design],
                label=f"{design} (predicted)")
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

    from experiments.atomic import atomic_write

    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    atomic_write(path, image.getvalue())  # whole or not at all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s [--out DIR] [--budget S] [--no-confirm] [with NAMED ... KEY=VALUE ...]")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "plan"), help="default: results/plan")
    parser.add_argument("--budget", type=float, default=40.0, help="seconds for the component measurements (default 40)")
    parser.add_argument("--confirm-seconds", type=float, default=15.0, help="length of each confirming run (default 15)")
    parser.add_argument("--no-confirm", action="store_true", help="predict only")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the config and the env, say what would be measured and how long it would take, stop")
    argv = list(sys.argv[1:] if argv is None else argv)
    tokens: list[str] = []
    if "with" in argv:
        argv, tokens = argv[:argv.index("with")], argv[argv.index("with") + 1:]
    args = parser.parse_args(argv)
    from architectures.core.config import ConfigError
    from architectures.core.envs import env_spec

    try:
        cfg, overrides = _config(tokens)
        env_spec(cfg.env_id)
    except (ConfigError, ValueError) as err:
        parser.exit(2, f"error: {err}\n")
    if args.dry_run:
        from experiments.plan_devices import learner_devices

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
    "contention": "measuring single_env's loop beside co-runners", "_threads": "timing the update by torch threads",
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


FIXED_SECONDS, CONFIRM_RUNS, CONFIRM_START_S, FIXED_ENV_STEPS = 10.0, 4, 3.0, 55_000
"""plan's time, as estimate_seconds adds it up: start-up and the model, the confirming runs (the
recommendation and the runner-up, and the recommendation at learner_threads 1 and 2, each with its
process start) and the env steps its measurements take whatever the budget (the loops' shortest
runs, the vector envs' round trips). Fitted on this 2-core machine: the default config (CartPole,
~10 us a step) took 122 s, an env whose step took 2 ms 232 s (issue 32), where 'about two minutes'
had been promised for both."""


def env_step_seconds(cfg, steps: int = 50, limit_s: float = 1.0) -> float:
    """The env's step as plan will meet it (its added cost and wait included), timed over up to
    `steps` steps or `limit_s` seconds, resets included: what plan's estimate scales with."""
    from architectures.core.envs import make_env

    env = make_env(cfg.env_id, cfg.env_step_cost_us, cfg.env_step_wait_us, cfg.max_episode_steps)
    try:
        env.reset(seed=0)
        began, done = time.perf_counter(), 0
        while done < steps and (done == 0 or time.perf_counter() - began < limit_s):
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()
            done += 1
        return (time.perf_counter() - began) / done
    finally:
        env.close()


def estimate_seconds(step_s: float, budget_s: float, confirm_s: float) -> float:
    """plan's time from the env's measured step (FIXED_SECONDS ...): the measurements' budget, the
    confirming runs (none with --no-confirm: confirm_s 0), and FIXED_ENV_STEPS at the env's pace."""
    confirming = CONFIRM_RUNS * (confirm_s + CONFIRM_START_S) if confirm_s else 0.0
    return FIXED_SECONDS + budget_s + confirming + FIXED_ENV_STEPS * step_s


def _plan(args, cfg, overrides) -> int:
    from analysis.cost_model import medians, predict_all, recommend
    from architectures.core.limits import available_cores
    from experiments.components import measure
    from experiments.host import cpu_model
    from experiments.plan_devices import learner_devices, measure_devices

    cores = available_cores()
    started = time.monotonic()
    what = overrides.text() or "the default config (CartPole-v1)"
    print(f"plan for {what} on {cores} cores ({cpu_model()})", file=sys.stderr)
    step_s = env_step_seconds(cfg)
    print(f"the env step takes {1e6 * step_s:,.0f} us here: expect about "
          f"{estimate_seconds(step_s, args.budget, 0 if args.no_confirm else args.confirm_seconds) / 60:.0f} min",
          file=sys.stderr)
    print("measuring components, each warm and alone:", file=sys.stderr)
    costs = measure(cfg, cores=cores, budget_s=args.budget, log=lambda line: print(line, file=sys.stderr))
    by_device = measure_devices(cfg, costs, learner_devices(), args.budget * 0.1,
                                lambda line: print(line, file=sys.stderr))
    threads = _threads(cfg, cores)
    best_threads = min(threads, key=threads.get) if threads else 1
    if 1 not in threads or threads[best_threads] > 0.9 * threads[1]:
        best_threads = 1  # under 10% faster is not worth a core the actors could use
    print("  update by torch threads: " + ", ".join(f"{t}: {us:,.0f} us" for t, us in threads.items()), file=sys.stderr)
    per_device = {device: predict_all(medians(c), utd=cfg.utd, cores=cores, weight_sync_period=cfg.weight_sync_period)
                  for device, c in by_device.items()}
    device = max(per_device, key=lambda d: recommend(per_device[d])[0].env_steps_per_sec)
    predictions = per_device[device]
    best, runner_up = recommend(predictions)
    base = per_device["cpu"][0].env_steps_per_sec  # single_env with its learner on the CPU
    if device != "cpu":
        print(f"the learner on {device}: predicted {best.env_steps_per_sec:,.0f} env steps/s against "
              f"{recommend(per_device['cpu'])[0].env_steps_per_sec:,.0f} on the CPU", file=sys.stderr)
        cfg = cfg.replace(device=device)
    confirmed = []
    if not args.no_confirm:
        print(f"confirming: {best.design} ({best.workers}) and {runner_up.design} ({runner_up.workers}), "
              f"~{args.confirm_seconds:.0f} s each, one at a time", file=sys.stderr)
        for p in (best, runner_up):
            confirmed.append(confirm(cfg, p.design, p.workers, p.env_steps_per_sec, args.confirm_seconds, costs,
                                     cores))
    in_place = {}
    if not args.no_confirm and cores > 1 and best.design != "hogwild":
        # The learner's threads, measured in place: the recommended run at 1 and 2 learner threads
        # (actors keep one each); an isolated update's speed-up did not carry into a parallel run.
        print(f"learner threads in place: {best.design} ({best.workers}) at learner_threads 1 and 2",
              file=sys.stderr)
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
    print(f"\n{'design':<14} {'workers':>7} {'predicted env steps/s':>22} {'x single_env':>12}  bottleneck")
    for p in predictions:
        mark = " (oversubscribed)" if p.oversubscribed else ""
        print(f"{p.design:<14} {p.workers:>7} {p.env_steps_per_sec:>22,.0f} {p.env_steps_per_sec / base:>11.2f}x  "
              f"{p.bottleneck}{mark}")
    print(f"\nrecommended: {best.design} with {best.workers} worker(s), the learner on {device}, "
          f"learner_threads={learner_threads} (actors and "
          f"workers 1; an isolated update was fastest at {best_threads}): predicted "
          f"{best.env_steps_per_sec:,.0f} env steps/s, {best.env_steps_per_sec / base:.2f}x single_env "
          f"({base:,.0f}); bound by {best.bottleneck}")
    print(f"runner-up:   {runner_up.design} with {runner_up.workers} worker(s): predicted "
          f"{runner_up.env_steps_per_sec:,.0f} env steps/s")
    for c in confirmed:
        error = c["measured_env_steps_per_sec"] / c["predicted_for_this_run"] - 1
        print(f"confirmed:   {c['design']} ({c['workers']}, {c['env_steps']:,} env steps with its first "
              f"{min(cfg.learning_starts, c['env_steps'] // 10):,} unlearned): predicted {c['predicted_for_this_run']:,.0f}, "
              f"measured {c['measured_env_steps_per_sec']:,.0f} env steps/s ({error:+.0%})")
    plan = {
        "config": cfg.to_dict(), "overrides": overrides.text(), "cores": cores,
        "host": {"cpu": cpu_model(), "python": platform.python_version(),
                 "node": platform.node()},
        "component_costs_us": costs, "update_us_by_threads": threads,
        "predictions": [{"design": p.design, "workers": p.workers, "predicted_env_steps_per_sec": p.env_steps_per_sec,
                         "bottleneck": p.bottleneck, "oversubscribed": p.oversubscribed, "role_rates": p.rates}
                        for p in predictions],
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
        "confirmed": confirmed, "seconds": time.monotonic() - started,
    }
    from experiments.atomic import atomic_write

    os.makedirs(args.out, exist_ok=True)  # only now: a plan that fails leaves no folder behind
    atomic_write(os.path.join(args.out, "plan.json"), json.dumps(plan, indent=1).encode())
    _figure(os.path.join(args.out, "plan.png"), predictions, confirmed, f"plan: {what} on {cores} cores")
    print(f"\nwrote {args.out}/plan.json and plan.png in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
