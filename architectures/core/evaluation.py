"""The one evaluation harness: holdout episodes at fixed env-step checkpoints.

Every design evaluates the learner's weights at the same checkpoints
(eval_every, 2 * eval_every, ..., and always total_env_steps) on the same holdout seeds, with
its own env and its own RNG, so evaluation never perturbs training and never counts in
throughput (callers time it separately and subtract it). Every holdout episode has an end: the
env's own cap, `max_episode_steps` or the env factory's default cap truncates it (envs.episode_limit),
and each checkpoint counts the episodes truncated (`truncated`).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.envs import HOLDOUT_SEED_BASE, holdout_seeds, make_env
from architectures.core.networks import GreedyPolicy, QNetwork


def checkpoint_steps(total_env_steps: int, eval_every: int) -> list[int]:
    """[eval_every, 2 * eval_every, ..., total_env_steps]: the same for every design."""
    steps = list(range(eval_every, total_env_steps, eval_every))
    return steps + [total_env_steps]


class HoldoutEvaluator:
    """Runs `eval_episodes` episodes, episode k seeded HOLDOUT_SEED_BASE + k."""

    def __init__(self, cfg: DQNConfig, net: QNetwork):
        self.cfg = cfg
        self.seeds = holdout_seeds(cfg.eval_episodes)
        self.env = (make_env(cfg.env_id, max_episode_steps=cfg.max_episode_steps, holdout=True)
                    if cfg.eval_episodes > 0 else None)
        self.net = net
        self.before: Callable[[], None] | None = None  # refreshes `net` first (a device learner's host copy)
        self.checkpoints = checkpoint_steps(cfg.total_env_steps, cfg.eval_every)
        self.results: list[dict] = []  # {"env_steps", "returns", "lengths"} per checkpoint

    @property
    def enabled(self) -> bool:
        return self.env is not None

    def due(self, env_steps: int) -> bool:
        return len(self.results) < len(self.checkpoints) and env_steps >= self.checkpoints[len(self.results)]

    def evaluate(self, env_steps: int, train_seconds: float | None = None) -> dict:
        """Play the holdout once with the current weights; record and return the result.
        `train_seconds`: the training clock at this checkpoint (evaluation excluded), kept so a
        learning curve can be drawn against wall-clock time as well as env steps."""
        returns, lengths, truncated = [], [], 0
        if self.env is not None and self.before is not None:
            self.before()
        if self.env is not None:
            # A fresh, fixed RNG per checkpoint: the same weights always give the same returns.
            policy = GreedyPolicy(self.net, np.random.default_rng(HOLDOUT_SEED_BASE))
            for seed in self.seeds:
                obs, _ = self.env.reset(seed=seed)
                total, length, done = 0.0, 0, False
                while not done:
                    obs, reward, terminated, cut, _ = self.env.step(policy.act(obs, self.cfg.eval_epsilon))
                    total += float(reward)
                    length += 1
                    done = terminated or cut
                truncated += bool(cut and not terminated)  # cut off at the cap, not ended by the env
                returns.append(total)
                lengths.append(length)
        result = {"checkpoint": self.checkpoints[len(self.results)], "env_steps": env_steps,
                  "returns": returns, "lengths": lengths, "truncated": truncated,
                  "return_mean": float(np.mean(returns)) if returns else float("nan")}
        if train_seconds is not None:
            result["train_seconds"] = float(train_seconds)
        self.results.append(result)
        return result

    def evaluate_off_clock(self, env_steps: int, clock, timers) -> dict:
        """`evaluate`, with the training clock paused around it (throughput never includes
        evaluation) and its seconds recorded under timers["eval"]: the one way every design
        evaluates."""
        clock.pause()
        began = time.perf_counter()
        result = self.evaluate(env_steps, clock.elapsed())
        timers.add("eval", time.perf_counter() - began)
        clock.resume()
        return result

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
