"""Env shapes `plan` was not built on, named the user's way (`experiments.plan.shapes:SHAPE-v0`).

plan's cost model was tuned on CartPole's and MinAtar Breakout's own steps and on steps made
slower through the config (`env_step_cost_us`, `env_step_wait_us`). A user's env says nothing in
the config: its step computes, waits, or both, sometimes unevenly, and its reset may be slow. These
envs hide such steps inside the env, as a user's would, so `plan` has to measure them; the
`plan_validation` sweep runs every design on them against plan's predictions, committed before
the runs (docs/plan-validation.md).

| shape | per step | reset |
|---|---|---|
| Busy100us | 0.1 ms of CPU | as the game's |
| Busy1ms | 1 ms of CPU | as the game's |
| Wait1ms | 1 ms blocked, no CPU | as the game's |
| Wait5ms | 5 ms blocked | as the game's |
| MixedThird | 0.3 ms of CPU, then 0.7 ms blocked | as the game's |
| MixedTwoThirds | 1.0 ms of CPU, then 0.5 ms blocked | as the game's |
| HeavyTail | blocked 0.3 ms on 96 steps in 100, 12 ms on 4 (mean 0.77 ms; drawn from the episode's seed) | as the game's |
| SlowReset | 0.5 ms blocked | 40 ms blocked |

Each shape comes on CartPole (the MLP: `SHAPE-v0`) and on MinAtar Breakout (the conv net:
`BreakoutSHAPE-v0`). CPU is spent on the thread's own clock, so a descheduled step still does its
work; a wait is a plain sleep (Linux's wake-up adds ~0.06 ms, as a user's would).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

SHAPES: dict[str, dict[str, float]] = {
    "Busy100us": {"busy_us": 100.0},
    "Busy1ms": {"busy_us": 1000.0},
    "Wait1ms": {"wait_us": 1000.0},
    "Wait5ms": {"wait_us": 5000.0},
    "MixedThird": {"busy_us": 300.0, "wait_us": 700.0},
    "MixedTwoThirds": {"busy_us": 1000.0, "wait_us": 500.0},
    "HeavyTail": {"wait_us": 300.0, "tail_us": 12_000.0, "tail_share": 0.04},
    "SlowReset": {"wait_us": 500.0, "reset_us": 40_000.0},
}
"""Each shape's step and reset; the step's mean in microseconds is `mean_step_us`."""

GAMES = {"": ("CartPole-v1", 500), "Breakout": ("MinAtar/Breakout-v1", 108_000)}
"""Prefix -> (the game stepped, its episode cap: CartPole's own, the MinAtar configs' 108,000)."""


def mean_step_us(shape: str) -> float:
    """A shape's mean step time in microseconds, beside the game's own step."""
    s = SHAPES[shape]
    tail = s.get("tail_share", 0.0)
    return s.get("busy_us", 0.0) + (1 - tail) * s.get("wait_us", 0.0) + tail * s.get("tail_us", 0.0)


class ShapedStep(gym.Wrapper):
    """The game's step and reset with a shape's CPU and blocking time added (see the module)."""

    def __init__(self, env: gym.Env, busy_us: float = 0.0, wait_us: float = 0.0, tail_us: float = 0.0,
                 tail_share: float = 0.0, reset_us: float = 0.0):
        super().__init__(env)
        self.busy_ns = int(busy_us * 1000)
        self.wait_s, self.tail_s, self.tail_share = wait_us / 1e6, tail_us / 1e6, tail_share
        self.reset_s = reset_us / 1e6
        self.draws = np.random.default_rng(0)  # which steps are slow: from the episode's seed, at reset

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.draws = np.random.default_rng(seed)
        if self.reset_s:
            time.sleep(self.reset_s)
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.busy_ns:
            end = time.thread_time_ns() + self.busy_ns
            while time.thread_time_ns() < end:
                pass
        wait = self.wait_s
        if self.tail_share and self.draws.random() < self.tail_share:
            wait = self.tail_s
        if wait:
            time.sleep(wait)
        return self.env.step(action)


def _make(game: str, shape: str):
    def make(**kwargs):
        if game.startswith("MinAtar/") and game not in gym.registry:  # registered by its package, once
            import minatar.gym

            minatar.gym.register_envs()
        return ShapedStep(gym.make(game, disable_env_checker=True), **SHAPES[shape])
    return make


for _prefix, (_game, _cap) in GAMES.items():
    for _shape in SHAPES:
        gym.register(f"{_prefix}{_shape}-v0", entry_point=_make(_game, _shape), max_episode_steps=_cap)
