"""The one replay buffer, and the n-step adder that feeds it (Acme's words: replay, adder).

A transition is stored already n-step-folded, so the DQN update never needs to know n:
    target = reward + discount * Q_target(next_obs, .)
where reward = sum_k gamma^k r_{t+k} over the k <= n steps actually taken, and discount is
gamma^k, or 0 when the episode terminated inside those steps (a truncation still bootstraps).

Each transition also carries `source` (which worker/env produced it) and `version` (the
learner update count of the parameters that chose its first action), for the policy-lag and
per-worker-share diagnostics.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, NamedTuple

import numpy as np

Allocator = Callable[[str, tuple, np.dtype], np.ndarray]


def numpy_allocator(name: str, shape: tuple, dtype: np.dtype) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


class Transition(NamedTuple):
    """Field order matches the replay record, so a Transition is stored as one row write."""

    obs: np.ndarray
    next_obs: np.ndarray
    action: int
    reward: float
    discount: float
    source: int
    version: int


def transition_dtype(obs_shape: tuple, obs_dtype: np.dtype) -> np.dtype:
    """One replay record. A whole transition is one contiguous row (64 bytes for CartPole), so a
    sample is one gather, a store is one row write, and a shared-memory buffer can reason about
    a row as a unit."""
    return np.dtype([("obs", obs_dtype, obs_shape), ("next_obs", obs_dtype, obs_shape), ("action", np.int64),
                     ("reward", np.float32), ("discount", np.float32), ("source", np.int32),
                     ("version", np.int64)], align=True)


class ReplayBuffer:
    """Preallocated numpy ring buffer of transition records; uniform sampling with replacement.

    `allocator` lets a parallel architecture back the same layout with shared memory.
    """

    def __init__(self, capacity: int, obs_shape: tuple, obs_dtype: np.dtype,
                 allocator: Allocator = numpy_allocator):
        self.capacity = capacity
        self.dtype = transition_dtype(tuple(obs_shape), np.dtype(obs_dtype))
        self.data = allocator("transitions", (capacity,), self.dtype)  # (N,) records
        self.cursor = 0  # next slot to write
        self.size = 0
        self.added = 0  # transitions ever added

    def add(self, t: Transition) -> None:
        self.data[self.cursor] = t
        self.cursor = (self.cursor + 1) % self.capacity
        if self.size < self.capacity:
            self.size += 1
        self.added += 1

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Uniform indices with replacement. Returns field views of one fresh gathered copy:
        obs, next_obs (B, *obs); action, reward, discount, source, version (B,)."""
        if self.size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        rows = self.data[rng.integers(0, self.size, batch_size)]  # (B,) records, a copy
        return {name: rows[name] for name in self.dtype.names}

    def state_dict(self) -> dict:
        return {"data": self.data[: self.size].copy(), "cursor": self.cursor, "size": self.size, "added": self.added}

    def load_state_dict(self, state: dict) -> None:
        self.data[: state["size"]] = state["data"]
        self.cursor, self.size, self.added = state["cursor"], state["size"], state["added"]


class NStepAdder:
    """Folds one env stream's steps into n-step transitions (one adder per env)."""

    def __init__(self, n: int, gamma: float, source: int = 0):
        self.n, self.gamma, self.source = n, gamma, source
        self.pending: deque = deque()  # (obs, action, reward, version), oldest first

    def step(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
             terminated: bool, truncated: bool, version: int) -> list[Transition]:
        """Record one env step; return the transitions it completes (0, 1, or up to n)."""
        self.pending.append((obs, action, float(reward), version))
        out: list[Transition] = []
        if terminated or truncated:
            # Flush every pending start: shorter horizons, no bootstrap if terminated.
            while self.pending:
                out.append(self._fold(next_obs, terminated))
                self.pending.popleft()
        elif len(self.pending) == self.n:
            out.append(self._fold(next_obs, False))
            self.pending.popleft()
        return out

    def _fold(self, next_obs: np.ndarray, terminated: bool) -> Transition:
        ret, disc = 0.0, 1.0
        for _, _, r, _ in self.pending:
            ret += disc * r
            disc *= self.gamma
        obs, action, _, version = self.pending[0]
        return Transition(obs, next_obs, action, ret, 0.0 if terminated else disc, self.source, version)

    def reset(self) -> None:
        self.pending.clear()
