"""Vectorised envs whose waits give up: gymnasium's AsyncVectorEnv under the suite's supervision.

vector_env and pqn step their envs in subprocesses through this class; a hung or dead env
process fails the run with one line naming it, where gymnasium alone would wait forever.
"""

from __future__ import annotations

import multiprocessing
import signal
import time

from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState

from architectures.transport.workers import WorkerFailed


class SupervisedEnvs(AsyncVectorEnv):
    """gymnasium's AsyncVectorEnv whose waits give up after `timeout_s` (worker_timeout_s), as
    actor_learner's and hogwild's supervision does: an env that does not answer, or whose process
    died, fails the run with a one-line WorkerFailed naming its index, pid, the env id and the env
    step, where gymnasium would wait forever or raise a bare EOFError; `close(terminate=True)`
    ends every env process, killing one that outlives SIGTERM (tests/test_vector_env_timeout.py)."""

    def __init__(self, factories: list, env_id: str, timeout_s: float):
        self.env_id, self.timeout_s, self.vector_steps = env_id, timeout_s, 0  # completed steps of each env
        super().__init__(factories, shared_memory=True, context="spawn", autoreset_mode=AutoresetMode.DISABLED)

    def step_async(self, actions) -> None:
        self._supervised(super().step_async, "step", actions)

    def step_wait(self, timeout: float | None = None):
        out = self._supervised(super().step_wait, "step", self.timeout_s if timeout is None else timeout)
        self.vector_steps += 1
        return out

    def reset_async(self, seed=None, options=None) -> None:
        self._supervised(super().reset_async, "reset", seed=seed, options=options)

    def reset_wait(self, timeout: float | None = None):
        return self._supervised(super().reset_wait, "reset", self.timeout_s if timeout is None else timeout)

    def _supervised(self, call, what: str, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except (multiprocessing.TimeoutError, EOFError, ConnectionError) as err:
            self._state = AsyncState.DEFAULT  # no answer is awaited any more: close() terminates at once
            raise WorkerFailed(self._culprit(what, err)) from None

    def _culprit(self, what: str, err: Exception) -> str:
        """One line naming the env that died (its pipe read EOF) or did not answer in time."""
        deadline = time.monotonic() + 1.0  # a pipe at EOF: give its exiting process a moment to be reaped
        dead = [i for i, p in enumerate(self.processes) if p.exitcode is not None]
        while not dead and not isinstance(err, multiprocessing.TimeoutError) and time.monotonic() < deadline:
            time.sleep(0.01)
            dead = [i for i, p in enumerate(self.processes) if p.exitcode is not None]
        if dead:
            index, code = dead[0], self.processes[dead[0]].exitcode
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        else:
            silent = [i for i, pipe in enumerate(self.parent_pipes)
                      if pipe is not None and not pipe.closed and not pipe.poll(0)]
            index = silent[0] if silent else 0
            how = f"did not answer its {what} within {self.timeout_s:g} s: hung (worker_timeout_s)"
        return (f"vector_env: env {index} (pid {self.processes[index].pid}) of {self.env_id!r} {how}, after "
                f"{self.vector_steps:,} env steps of each env ({self.vector_steps * self.num_envs:,} of the run)")

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        if terminate:
            self._state = AsyncState.DEFAULT  # a pending answer is not wanted: end the processes
            for proc in self.processes:
                if proc.is_alive():
                    proc.terminate()
            deadline = time.monotonic() + 2.0
            for proc in self.processes:
                proc.join(max(0.0, deadline - time.monotonic()))
                if proc.is_alive():
                    proc.kill()
        super().close_extras(timeout, terminate)
