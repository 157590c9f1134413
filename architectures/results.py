"""The result dict every architecture returns (Sacred stores it as run.json `result`)."""

from __future__ import annotations

from architectures.config import DQNConfig
from architectures.dqn import UpdateRatio
from architectures.evaluation import HoldoutEvaluator
from architectures.metrics import Timers


def component_bound(updates_per_step: float, costs_us: dict[str, float]) -> float:
    """Env steps/s if one process did nothing but, per env step: env step + act + store, and
    `updates_per_step` x (sample + update), at this run's measured cost per call."""
    per_step_us = (costs_us.get("env_step", 0.0) + costs_us.get("act", 0.0) + costs_us.get("replay_add", 0.0)
                   + updates_per_step * (costs_us.get("sample", 0.0) + costs_us.get("update", 0.0)))
    return 1e6 / per_step_us if per_step_us > 0 else float("inf")


def run_result(cfg: DQNConfig, *, env_steps: int, updates: int, episodes: int, train_seconds: float,
               ratio: UpdateRatio, timers: Timers, evaluator: HoldoutEvaluator, **extra) -> dict:
    breakdown = timers.summary()
    costs_us = {name: row["us_per_call"] for name, row in breakdown.items()}
    steps_per_sec = env_steps / train_seconds
    bound = component_bound(updates / env_steps, costs_us)  # the run's own mix, learning_starts included
    curve = [{"env_steps": r["env_steps"], "return_mean": r["return_mean"]} for r in evaluator.results]
    return {
        "env_steps": env_steps,
        "updates": updates,
        "episodes": episodes,
        "train_seconds": train_seconds,
        "eval_seconds": breakdown.get("eval", {}).get("seconds", 0.0),
        "env_steps_per_sec": steps_per_sec,
        "updates_per_sec": updates / train_seconds,
        "target_utd": cfg.utd,
        "realised_utd": ratio.realised(updates, env_steps),
        "final_holdout_return": curve[-1]["return_mean"] if curve else float("nan"),
        "holdout_curve": curve,
        "component_costs_us": costs_us,
        "component_bound_steps_per_sec": bound,
        "fraction_of_bound": steps_per_sec / bound,
        "time_breakdown": breakdown,
        **extra,
    }
