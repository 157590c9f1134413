"""Envs that misbehave on purpose, for tests/test_faults.py: named the user's way,
`tests.fault_envs:<Id>`, so every process that makes an env (spawned actors and workers,
vector_env's and pqn's env processes) imports this module and finds them.

Each is CartPole-v1 until its own env step `after` (counted per env instance, across episodes),
then: NaN observations, a NaN reward, or, once, a file that fills the folder named by
`PDQN_TEST_FILL` (a small tmpfs) until the disk is full. SlowClose-v0 takes seconds to close.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np

AFTER = 500
FILL_ENV = "PDQN_TEST_FILL"


class _Faulty(gym.Wrapper):
    def __init__(self, after: int = AFTER):
        super().__init__(gym.make("CartPole-v1"))
        self.after, self.steps = after, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.after:
            obs, reward = self.fault(obs, reward)
        return obs, reward, terminated, truncated, info

    def fault(self, obs, reward):
        return obs, reward


class NanObs(_Faulty):
    def fault(self, obs, reward):
        return np.full_like(obs, np.nan), reward


class NanReward(_Faulty):
    def fault(self, obs, reward):
        return obs, float("nan")


class FillsDisk(_Faulty):
    def fault(self, obs, reward):
        folder = os.environ.get(FILL_ENV)
        if folder and self.steps == self.after:
            try:
                with open(os.path.join(folder, "filler"), "wb") as f:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
            except OSError:  # ENOSPC: the disk is full now
                pass
        return obs, reward


class SlowClose(_Faulty):
    """Closing takes CLOSE_S seconds (a simulator that shuts down slowly): the teardown a run's
    training clock must not count (tests/test_clock.py)."""
    CLOSE_S = 4.0

    def close(self):
        time.sleep(self.CLOSE_S)
        super().close()


# Not a fault: CartPole cut off at 20 steps, so every episode ends in a time limit (tests/test_pqn.py).
gym.register("ShortPole-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv", max_episode_steps=20)

for _name, _cls in (("NanObs-v0", NanObs), ("NanReward-v0", NanReward), ("FillsDisk-v0", FillsDisk),
                    ("SlowClose-v0", SlowClose)):
    gym.register(_name, entry_point=_cls, max_episode_steps=500)
