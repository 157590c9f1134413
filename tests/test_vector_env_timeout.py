"""vector_env honours worker_timeout_s: an env process that hangs, or dies, fails the run within
the timeout naming the env, and closing the envs leaves no process and no semaphore behind.

gymnasium's AsyncVectorEnv, which vector_env stepped its envs with up to dc629ec, waits forever
for a hung env and reports a killed one as a bare EOFError; actor_learner and hogwild name theirs
(tests/test_actor_learner.py, test_hogwild.py), and so do vector_env's own env processes.
The envs here are a user's own module (`stall_envs:Hangs-v0`, as tests/test_user_envs.py
registers them): only the instance in env process 1 misbehaves, after 500 of its steps, and
writes the moment it starts to a file, so the test times the failure from the fault itself.
"""

import gc
import multiprocessing.synchronize
import os
import sys
import time

import gymnasium as gym
import pytest

from architectures.core.config import DQNConfig
from architectures.designs import vector_env
from architectures.transport.workers import WorkerFailed
from tests.test_actor_learner import assert_clean

pytestmark = pytest.mark.alone  # it measures times or CPU seconds (tests/conftest.py)

STALL_ENVS = '''
import multiprocessing, os, signal, time

import gymnasium as gym
import numpy as np

class Stalls(gym.Env):
    """Hangs (or kills itself) in vector env process `index` after `after` steps; fine elsewhere."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, fault, index=1, after=500):
        # The run's worker pool names env process i "env-i"; the main process's probe and
        # evaluation envs never misbehave.
        self.armed = multiprocessing.current_process().name == f"env-{index}"
        self.fault, self.after, self.steps, self.t = fault, after, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.steps, self.t = self.steps + 1, self.t + 1
        if self.armed and self.steps > self.after:
            with open(os.environ["STALL_MARK"], "w") as f:
                f.write(repr(time.monotonic()))
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(3600)
        return np.zeros(4, np.float32), 1.0, False, self.t >= 50, {}


gym.register("Hangs-v0", entry_point=Stalls, kwargs={"fault": "hang"})
gym.register("Dies-v0", entry_point=Stalls, kwargs={"fault": "kill"})
'''


@pytest.fixture
def stall_envs(tmp_path, monkeypatch):
    """The module on sys.path (spawned env processes get the parent's), the fault's time file, and
    the name of every semaphore this test creates (they live in /dev/shm as sem.<name>)."""
    (tmp_path / "stall_envs.py").write_text(STALL_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("STALL_MARK", str(tmp_path / "mark"))
    names: list[str] = []
    make_name = multiprocessing.synchronize.SemLock._make_name
    monkeypatch.setattr(multiprocessing.synchronize.SemLock, "_make_name",
                        staticmethod(lambda: names.append(make_name()) or names[-1]))
    yield tmp_path / "mark", names
    sys.modules.pop("stall_envs", None)  # the next test imports and registers it afresh
    for env_id in ("Hangs-v0", "Dies-v0"):
        gym.registry.pop(env_id, None)


def _cfg(env_id: str, timeout_s: float) -> DQNConfig:
    return DQNConfig(env_id=env_id, num_workers=2, total_env_steps=20_000, learning_starts=200, hidden_sizes=(16,),
                     buffer_size=2_000, batch_size=16, eval_episodes=0, eval_every=20_000, log_every=5_000,
                     worker_timeout_s=timeout_s)


def _fails(cfg: DQNConfig, mark) -> tuple[str, float]:
    """The run's one-line failure, and its seconds after the env started misbehaving."""
    with pytest.raises(WorkerFailed) as info:
        vector_env.train(cfg)
    seconds = time.monotonic() - float(mark.read_text())
    text = str(info.value)
    del info  # its traceback holds the envs: drop it so their semaphores are released
    gc.collect()
    return text, seconds


def _assert_no_semaphores(names: list[str]) -> None:
    assert names, "the run created no semaphore: the check below would check nothing"
    assert [n for n in names if os.path.exists(f"/dev/shm/sem.{n.lstrip('/')}")] == []


@pytest.mark.slow
def test_a_hung_env_fails_the_run_within_the_timeout_naming_it(stall_envs):
    mark, semaphores = stall_envs
    text, seconds = _fails(_cfg("stall_envs:Hangs-v0", timeout_s=2.0), mark)
    assert seconds < 3.0, (seconds, text)  # the timeout plus a second
    assert text.startswith("vector_env: env 1 (pid ") and "\n" not in text
    assert "'stall_envs:Hangs-v0' did not answer its step within 2 s: hung (worker_timeout_s)" in text
    assert "after 500 of its env steps (" in text  # the other env steps on meanwhile: it never waits for env 1
    assert_clean()  # no env process is left
    _assert_no_semaphores(semaphores)


def test_a_killed_env_fails_the_run_at_once_naming_it(stall_envs):
    mark, semaphores = stall_envs
    text, seconds = _fails(_cfg("stall_envs:Dies-v0", timeout_s=30.0), mark)
    assert seconds < 2.0, (seconds, text)  # its pipe reads EOF: no waiting for the 30 s timeout
    assert text.startswith("vector_env: env 1 (pid ") and "was killed by SIGKILL" in text and "\n" not in text
    assert_clean()
    _assert_no_semaphores(semaphores)
