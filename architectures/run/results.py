"""The result dict every design returns (Sacred stores it as run.json `result`)."""

from __future__ import annotations

from architectures.core.config import DQNConfig
from architectures.core.envs import episode_limit
from architectures.core.evaluation import HoldoutEvaluator
from architectures.core.metrics import Timers
from architectures.core.schedules import UpdateRatio


def run_result(cfg: DQNConfig, *, env_steps: int, updates: int, episodes: int, train_seconds: float,
               ratio: UpdateRatio, timers: Timers, evaluator: HoldoutEvaluator, **extra) -> dict:
    breakdown = timers.summary()
    costs_us = {name: row["us_per_call"] for name, row in breakdown.items()}
    steps_per_sec = env_steps / train_seconds
    timed = sum(row["seconds"] for name, row in breakdown.items() if name not in ("eval", "checkpoint"))
    cap, cap_source = episode_limit(cfg.env_id, cfg.max_episode_steps)
    curve = [{"env_steps": r["env_steps"], "return_mean": r["return_mean"]} for r in evaluator.results]
    return {
        "env_steps": env_steps,
        "updates": updates,
        "episodes": episodes,
        "train_seconds": train_seconds,
        "eval_seconds": breakdown.get("eval", {}).get("seconds", 0.0),
        "checkpoint_seconds": breakdown.get("checkpoint", {}).get("seconds", 0.0),
        "env_steps_per_sec": steps_per_sec,
        "updates_per_sec": updates / train_seconds,
        "target_utd": cfg.utd,
        "realised_utd": ratio.realised(updates, env_steps),
        "final_holdout_return": curve[-1]["return_mean"] if curve else float("nan"),
        "holdout_curve": curve,
        # Training seconds (evaluation excluded) at each checkpoint, apart from the curve so that
        # a curve stays a deterministic function of the seed.
        "checkpoint_train_seconds": [r.get("train_seconds") for r in evaluator.results],
        # Holdout episodes cut off at the episode cap (max_episode_steps) at each checkpoint: an
        # episode that never ended is counted here, never waited on.
        "holdout_truncated": [r.get("truncated", 0) for r in evaluator.results],
        # Where every episode was cut and why: "max_episode_steps", the "env"'s registered cap, or the
        # env factory's "default" for an env registered without one (envs.DEFAULT_EPISODE_CAP).
        "episode_cap": cap,
        "episode_cap_source": cap_source,
        "component_costs_us": costs_us,
        # Share of the training time spent inside the timed components; the rest is loop overhead.
        "timed_fraction": timed / train_seconds,
        "time_breakdown": breakdown,
        **extra,
    }
