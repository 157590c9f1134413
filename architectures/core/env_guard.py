"""Every env raises through one guard: whatever its reset or step raises ends the run with one
line naming the env, the process it ran in, the env step and the exception's own message
(errors.EnvFailed), its traceback kept as the error's detail for the run's record. The one env
factory (envs.make_env) puts it outermost on every env, so every design, plan and the holdout
get it without a line of their own.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import traceback
import warnings

import gymnasium as gym

from architectures.core.errors import EnvFailed

_PROCESS_NAME: str | None = None


def name_this_process(name: str) -> None:
    """What an env's error calls this process, where its multiprocessing name cannot say (a Ray actor)."""
    global _PROCESS_NAME
    _PROCESS_NAME = name


def this_process() -> str:
    """The process an env runs in, as an error names it: `the main process`, `actor 0, pid 4242`
    (workers.WorkerPool names its processes `<role>-<index>`), `env 1, pid 4243` (AsyncVectorEnv's
    `Worker<...>-<index>`), or what name_this_process set."""
    if _PROCESS_NAME:
        return _PROCESS_NAME
    name = multiprocessing.current_process().name
    if name == "MainProcess":
        return "the main process"
    vector = re.fullmatch(r"Worker<\w+>-(\d+)", name)
    role, index = (("env", vector.group(1)) if vector else name.rpartition("-")[::2])
    return f"{role} {index}, pid {os.getpid()}" if role and index.isdigit() else f"{name}, pid {os.getpid()}"


# gymnasium's AsyncVectorEnv prints an env process's traceback as warnings before it raises the
# error again in the main process; that error (an EnvFailed from GuardedEnv) carries the traceback
# to the run's record, and the terminal gets its one line.
warnings.filterwarnings("ignore", r"\S*ERROR: (Received the following error from Worker|Raising the last exception "
                        r"back|Traceback)", UserWarning)


class GuardedEnv(gym.Wrapper):
    """The outermost wrapper of every env: whatever its reset or step raises comes out as one
    EnvFailed naming the env, the process, the env step and the exception's own message, with
    the traceback as its detail (tests/test_faults.py::test_an_env_that_raises_ends_the_run_in_one_line_naming_env_process_step_and_message)."""

    def __init__(self, env: gym.Env, env_id: str, where: str = ""):
        super().__init__(env)
        self.env_id, self.where, self.steps = env_id, where, 0

    def reset(self, **kwargs):
        try:
            return self.env.reset(**kwargs)
        except Exception as err:  # noqa: BLE001 - the user's env: whatever it raises, one line
            raise self._failed(err, f"reset, after {self.steps:,} env steps") from err

    def step(self, action):
        try:
            out = self.env.step(action)
        except Exception as err:  # noqa: BLE001
            raise self._failed(err, f"its env step {self.steps + 1:,}") from err
        self.steps += 1
        return out

    def _failed(self, err: Exception, when: str) -> EnvFailed:
        if isinstance(err, EnvFailed):
            return err
        said = " ".join(str(err).split())
        said = said if len(said) <= 300 else said[:297] + "..."
        return EnvFailed(f"env {self.env_id} ({this_process()}{self.where}) raised in {when}: {type(err).__name__}"
                         + (f": {said}" if said else ""), detail=traceback.format_exc())
