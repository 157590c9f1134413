"""Tiny synthetic Sacred runs shaped like the suite's, for the analysis tests: no training, just
the config, metrics and result layout that experiments/train.py stores, with known values."""

from __future__ import annotations

import json
import os

from sacred import Experiment


def _experiment() -> Experiment:
    ex = Experiment("parallel_dqn", save_git_info=False)  # the name experiments/train.py uses

    @ex.config
    def config():
        architecture = "single_env"  # noqa: F841 - Sacred reads these names
        num_workers = 1  # noqa: F841
        utd = 0.25  # noqa: F841
        seed = 1  # noqa: F841
        env_id = "CartPole-v1"  # noqa: F841
        total_env_steps = 3_000  # noqa: F841
        eval_every = 1_000  # noqa: F841
        eval_episodes = 2  # noqa: F841
        layer_norm = False  # noqa: F841
        reset_period = 0  # noqa: F841
        env_step_cost_us = 0.0  # noqa: F841
        quality = 100.0  # noqa: F841 - final holdout return before the seed's offset
        speed = 1_000.0  # noqa: F841 - env steps/s before the seed's offset
        grid_offset = 0  # noqa: F841 - shifts this run's checkpoints (a mixed grid)
        store_holdout = True  # noqa: F841 - false: a run whose holdout was never stored
        runs_at_once = 1  # noqa: F841 - a sweep's --jobs: runs beside it sharing the CPU
        lr = 5e-4  # noqa: F841 - a calibration grid's axis
        learning_starts = 0  # noqa: F841 - env steps of warm-up, made 10x as fast as the rest (no updates)
        diverged_at_update = 0  # noqa: F841 - > 0: a non-finite TD loss stopped the run at this update

    @ex.main
    def main(_run, architecture, num_workers, utd, seed, total_env_steps, eval_every, quality, speed, grid_offset,
             store_holdout, runs_at_once, learning_starts, diverged_at_update):
        rate = speed * (1 + 0.01 * seed)  # env steps/s once learning

        def seconds_at(step: int) -> float:  # training seconds to reach `step`
            return min(step, learning_starts) / (10 * rate) + max(step - learning_starts, 0) / rate

        steps = list(range(eval_every, total_env_steps + 1, eval_every))
        curve = []
        for k, step in enumerate(steps, start=1):
            value = quality * k / len(steps) + seed
            curve.append({"env_steps": step + grid_offset, "return_mean": value, "train_seconds": step / speed})
            if store_holdout:
                _run.log_scalar("holdout_return_mean", value, step + grid_offset)
            _run.log_scalar("td_loss", 1.0 / k, step)
            _run.log_scalar("env_steps_per_sec", step / seconds_at(step), step)  # cumulative, as the loop logs it
        train_seconds = seconds_at(total_env_steps)
        result = {
            "architecture": architecture, "env_steps": total_env_steps,
            "env_steps_per_sec": total_env_steps / train_seconds,
            "train_seconds": train_seconds, "updates": int(total_env_steps * utd), "realised_utd": utd,
            "runs_at_once": runs_at_once,
            "final_holdout_return": curve[-1]["return_mean"], "holdout_curve": curve if store_holdout else [],
            "component_costs_us": {"act": 20.0, "env_step": 15.0, "sample": 60.0, "update": 700.0},
            "time_breakdown": {"act": {"seconds": 0.1 * train_seconds, "calls": 1, "us_per_call": 1.0},
                               "update": {"seconds": 0.6 * train_seconds, "calls": 1, "us_per_call": 1.0}},
        }
        if architecture == "actor_learner":
            result["policy_lag"] = {"mean": 900.0, "p50": 800.0, "p95": 2000.0, "max": 4000.0}
            result["acting_staleness"] = {"mean": 6.0, "p50": 5.0, "p95": 11.0, "max": 40.0}
            result["worker_shares"] = {"env_steps": [0.5, 0.5], "sampled": [0.49, 0.51]}
            result["actor_time_breakdown"] = {"env_step": {"seconds_per_actor": 0.5 * train_seconds}}
            result["bottleneck"] = {"summary": "actors (busy 90% of the time, mostly env_step)"}
        if architecture == "high_utd":
            result["diverged"] = utd > 8
            result["max_abs_q"] = 5_000.0 if utd > 8 else 100.0
        if diverged_at_update:  # as the designs store a run a non-finite value stopped
            result.update(diverged=True, diverged_at_update=diverged_at_update, diverged_reason="non-finite TD loss")
        return result

    return ex


def make_runs(observer, specs: list[dict]) -> list[str]:
    """Run one synthetic run per spec ({"run_id": ..., config values ...}) into the observer."""
    ex = _experiment()
    ex.observers.append(observer)
    ids = []
    for spec in specs:
        spec = dict(spec)
        run_id = spec.pop("run_id")
        ex.run(config_updates=spec, options={"--id": run_id, "--loglevel": "ERROR"})
        ids.append(run_id)
    return ids


def headline_specs(seeds: int = 3) -> list[dict]:
    """An `architectures` sweep in miniature: single_env, a faster actor_learner, a better high_utd."""
    specs = []
    for seed in range(1, seeds + 1):
        specs.append({"run_id": f"architectures-single{seed}", "seed": seed})
        specs.append({"run_id": f"architectures-actor{seed}", "seed": seed, "architecture": "actor_learner",
                      "num_workers": 2, "speed": 1_900.0, "quality": 95.0})
        specs.append({"run_id": f"architectures-highutd{seed}", "seed": seed, "architecture": "high_utd",
                      "utd": 4.0, "layer_norm": True, "speed": 300.0, "quality": 200.0})
    return specs


def write_run(folder: str, run_id: str, config: dict | None = None, result: dict | None = None,
              status: str = "COMPLETED", run_json: str | None = None, metrics: dict | None = None) -> str:
    """One run written by hand as a FileStorageObserver stores it (`<folder>/<run_id>/run.json`,
    config.json, metrics.json), without running Sacred: `run_json` replaces the run.json text (a
    file cut mid-way), a `result` of None stores none, `metrics` is metrics.json's content (none
    logged by default; steady_log logs a rate). Returns the run's folder."""
    path = os.path.join(folder, run_id)
    os.makedirs(path, exist_ok=True)
    config = {"architecture": "single_env", "seed": 1, "env_id": "CartPole-v1", **(config or {})}
    run = {"experiment": {"name": "parallel_dqn"}, "status": status, "start_time": "2024-01-01T00:00:00",
           "host": {"cpu": "synthetic"}, "meta": {}}
    if result is not None:
        run["result"] = result
    with open(os.path.join(path, "run.json"), "w") as f:
        f.write(json.dumps(run) if run_json is None else run_json)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(path, "metrics.json"), "w") as f:
        json.dump(metrics or {}, f)
    return path


def steady_log(rate: float) -> dict:
    """metrics.json logging `rate` env steps/s at env step 0, as the loop logs it: with no warm-up
    (learning_starts 0) a run's rate once learning (analysis.io.load.learning_rate) is then its
    env_steps over its train_seconds, which its result must hold."""
    return {"env_steps_per_sec": {"steps": [0], "values": [rate], "timestamps": ["2024-01-01T00:00:00"]}}
