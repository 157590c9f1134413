"""The Saveable parts a run holds besides its learning, so that `Run.resume()` restores every design
and none reads or writes a checkpoint itself (Acme's Saveable): env streams stepped in this process
(`StreamPart` for one env loop, `EnvStreams` for vector_env's many), the worker processes' own state
(`WorkerStates`: it lives in the workers, so a save collects it from them at a sync point and a resume
keeps it to hand back to each as it starts), and plain arrays the learner keeps (`ArrayPart`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from architectures.run.acting import EnvLoop, EpisodeStream, resume_epsilons
from architectures.run.base import Restored
from architectures.run.worker_rows import restore_status


def streams_restored(cfg, stream_states: list[dict]) -> Restored:
    """What resuming env streams that act in other processes drops, for the result: the n-step starts
    pending in their saved states, and the epsilon each resumes with (resume_epsilons)."""
    return Restored(sum(state["pending"] for state in stream_states), resume_epsilons(cfg, stream_states))


class StreamPart:
    """One env loop stepped in this process (single_env, high_utd): its stream, RNG and timers."""

    def __init__(self, loop: EnvLoop):
        self.loop = loop

    def save(self) -> dict:
        return self.loop.save()

    def restore(self, state: dict) -> Restored:
        dropped = self.loop.restore(state)
        return Restored(dropped, [self.loop.epsilon(self.loop.steps)])


class EnvStreams:
    """N env streams stepped from this process through env processes (vector_env, pqn): their seeds,
    adders and statistics, the batched policy's RNG, the env processes' counters and the loop's
    seconds by role (`seconds`, the loop's own dict, kept in place)."""

    def __init__(self, streams: list[EpisodeStream], policy, envs, epsilon: Callable[[int], float], seconds: dict):
        self.streams, self.policy, self.envs, self.epsilon, self.seconds = streams, policy, envs, epsilon, seconds

    def save(self) -> dict:
        return {"streams": [s.save() for s in self.streams], "seconds": dict(self.seconds),
                "policy_rng": self.policy.rng.bit_generator.state, "envs": self.envs.counters()}

    def restore(self, state: dict) -> Restored:
        """Every env starts a fresh episode with the seed its stream was on."""
        dropped = sum(s.restore(saved) for s, saved in zip(self.streams, state["streams"]))
        self.policy.rng.bit_generator.state = state["policy_rng"]
        self.seconds.update(state["seconds"])
        self.envs.resume_counters(state["envs"], [s.steps for s in self.streams])
        env_steps = sum(s.steps for s in self.streams)  # every env step is one stream's
        return Restored(dropped, [self.epsilon(env_steps)] * len(self.streams))


class WorkerStates:
    """What lives in the worker processes (their env streams, RNGs, a hogwild worker's own replay and
    Adam moments) and their status rows. `collect` (set once the workers run) gathers their states at
    a sync point; after a resume `starting(...)` gives each worker its saved state (None: a fresh
    start). `stream(state)` finds a worker's env stream in its state, for what the resume dropped."""

    def __init__(self, cfg, status: np.ndarray, stream: Callable[[dict], dict] = lambda state: state["actor"]):
        self.cfg, self.status, self.stream = cfg, status, stream
        self.collect: Callable[[], list[dict]] | None = None
        self.saved: list[dict] | None = None

    def save(self) -> dict:
        return {"workers": self.collect(), "status": self.status.copy()}

    def restore(self, state: dict) -> Restored:
        restore_status(self.status, state["status"])
        self.saved = state["workers"]
        return streams_restored(self.cfg, [self.stream(s) for s in self.saved])

    def starting(self, **with_each) -> list[dict | None]:
        """Each worker's saved state (with `with_each` added), or None everywhere for a fresh start."""
        if self.saved is None:
            return [None] * len(self.status)
        return [{**state, **with_each} for state in self.saved]


class ArrayPart:
    """A numpy array the learner keeps (Ray's transitions received per actor), saved and restored in place."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def save(self) -> np.ndarray:
        return self.array.copy()

    def restore(self, state: np.ndarray) -> None:
        self.array[:] = state
