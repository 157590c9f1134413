"""Envs that misbehave on purpose, for tests/test_faults.py: named the user's way,
`tests.fault_envs:<Id>`, so every process that makes an env (spawned actors and workers,
vector_env's and pqn's env processes) imports this module and finds them.

Each is CartPole-v1 until its own env step `after` (counted per env instance, across episodes),
then: NaN observations, a NaN reward, or, once, a file that fills the folder named by
`PDQN_TEST_FILL` (a small tmpfs) until the disk is full. SlowClose-v0 takes seconds to close.
StepRaises-v0 raises in its step RAISES_AT, ResetRaises-v0 in its first reset, and Endless-v0
never ends an episode and is registered without a cap.
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
    CLOSE_S = 1.5

    def close(self):
        time.sleep(self.CLOSE_S)
        super().close()


RAISES_AT = 100
RAISED = "the simulator lost its licence server"


class StepRaises(_Faulty):
    def __init__(self):
        super().__init__(after=RAISES_AT)

    def fault(self, obs, reward):
        raise RuntimeError(f"{RAISED}\n(at step {self.steps})")  # two lines: the error keeps it on one


class ResetRaises(_Faulty):
    def reset(self, **kwargs):
        raise OSError(f"{RAISED}: cannot reset")


class Endless(gym.Env):
    """A corridor with no end: never terminates, and registered with no max_episode_steps."""
    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


gym.register("Endless-v0", entry_point=Endless)
# Not a fault: CartPole cut off at 20 steps, so every episode ends in a time limit (tests/test_pqn.py).
gym.register("ShortPole-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv", max_episode_steps=20)

for _name, _cls in (("StepRaises-v0", StepRaises), ("ResetRaises-v0", ResetRaises), ("NanObs-v0", NanObs), ("NanReward-v0", NanReward), ("FillsDisk-v0", FillsDisk),
                    ("SlowClose-v0", SlowClose)):
    gym.register(_name, entry_point=_cls, max_episode_steps=500)
