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

    `allocator` lets a parallel design back the same layout with shared memory.
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

    def extend(self, rows: np.ndarray) -> None:
        """Store a block of records (n,) in order, as n calls to `add` would (the learner drains
        actors' hand-off rings with this: one or two slice copies instead of n row writes)."""
        n = len(rows)
        if n > self.capacity:  # only the newest `capacity` rows survive a wrap anyway
            skipped = n - self.capacity
            self.added += skipped
            self.cursor = (self.cursor + skipped) % self.capacity
            rows, n = rows[n - self.capacity:], self.capacity
        first = min(n, self.capacity - self.cursor)
        self.data[self.cursor:self.cursor + first] = rows[:first]
        self.data[:n - first] = rows[first:]
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.capacity, self.size + n)
        self.added += n

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Uniform indices with replacement. Returns field views of one fresh gathered copy:
        obs, next_obs (B, *obs); action, reward, discount, source, version (B,)."""
        if self.size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        # np.take, not fancy indexing: the same rows, copied whole, where fancy indexing copies a
        # record field by field, which is slower (docs/design-notes.md#replay).
        rows = np.take(self.data, rng.integers(0, self.size, batch_size))  # (B,) records, a copy
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


class SumTree:
    """Binary sum tree over `capacity` leaves, vectorised: set and search a whole batch at once."""

    def __init__(self, capacity: int):
        self.leaves = max(2, 1 << (capacity - 1).bit_length())  # >= 2: the root is never a leaf
        self.tree = np.zeros(2 * self.leaves)  # node 1 is the root; leaf i is node leaves + i

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def set(self, indices: np.ndarray, values: np.ndarray) -> None:
        nodes = np.asarray(indices) + self.leaves
        self.tree[nodes] = values  # with repeated indices the last value wins, as sequential sets would
        nodes = np.unique(nodes >> 1)
        while True:
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]
            if nodes[0] == 1:
                return
            nodes = np.unique(nodes >> 1)

    def find(self, mass: np.ndarray) -> np.ndarray:
        """Leaf index whose prefix-sum interval holds each mass in [0, total)."""
        nodes = np.ones(len(mass), dtype=np.int64)
        mass = mass.copy()
        while nodes[0] < self.leaves:
            left = self.tree[2 * nodes]
            go_right = mass >= left
            mass -= left * go_right
            nodes = 2 * nodes + go_right
        return nodes - self.leaves


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritized replay (Schaul et al. 2016), as Ape-X uses it.

    P(i) = p_i^alpha / sum_k p_k^alpha with p_i = |TD error| + 1e-6; new rows get the priority
    their actor computed, or the largest priority seen so far. `sample` adds `indices` and
    importance `weights` (N P(i))^-beta / max over the batch, and draws one index per equal
    slice of the total mass (stratified), as Schaul et al. do.
    """

    EPS = 1e-6

    def __init__(self, capacity: int, obs_shape: tuple, obs_dtype: np.dtype, alpha: float, beta: float,
                 allocator: Allocator = numpy_allocator):
        super().__init__(capacity, obs_shape, obs_dtype, allocator)
        self.alpha, self.beta = alpha, beta
        self.tree = SumTree(capacity)
        self.max_priority = 1.0

    def _set(self, indices: np.ndarray, priorities: np.ndarray | None) -> None:
        if priorities is None:
            priorities = np.full(len(indices), self.max_priority)
        else:
            priorities = np.abs(priorities) + self.EPS
            self.max_priority = max(self.max_priority, float(priorities.max()))
        self.tree.set(indices, priorities ** self.alpha)

    def add(self, t: Transition, priority: float | None = None) -> None:
        slot = self.cursor
        super().add(t)
        self._set(np.array([slot]), None if priority is None else np.array([priority]))

    def extend(self, rows: np.ndarray, priorities: np.ndarray | None = None) -> None:
        n = min(len(rows), self.capacity)
        start = (self.cursor + len(rows) - n) % self.capacity
        super().extend(rows)
        slots = (start + np.arange(n)) % self.capacity
        self._set(slots, None if priorities is None else np.asarray(priorities)[len(rows) - n:])

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if self.size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        total = self.tree.total
        mass = (np.arange(batch_size) + rng.random(batch_size)) * (total / batch_size)  # (B,) stratified
        indices = np.minimum(self.tree.find(mass), self.size - 1)                      # (B,)
        probs = self.tree.tree[indices + self.tree.leaves] / total                      # (B,)
        weights = (self.size * np.maximum(probs, 1e-12)) ** -self.beta
        rows = np.take(self.data, indices)  # a copy, whole rows (ReplayBuffer.sample)
        batch = {name: rows[name] for name in self.dtype.names}
        batch["indices"] = indices
        batch["weights"] = (weights / weights.max()).astype(np.float32)
        return batch

    def update_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None:
        self._set(indices, np.asarray(td_abs, dtype=np.float64))

    def state_dict(self) -> dict:
        return {**super().state_dict(), "tree": self.tree.tree.copy(), "max_priority": self.max_priority}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.tree.tree[:] = state["tree"]
        self.max_priority = state["max_priority"]


def make_replay(cfg, obs_shape: tuple, obs_dtype: np.dtype, allocator: Allocator = numpy_allocator) -> ReplayBuffer:
    """The replay `cfg` asks for: uniform, or proportional prioritized."""
    if cfg.prioritized:
        return PrioritizedReplayBuffer(cfg.buffer_size, obs_shape, obs_dtype, cfg.priority_alpha,
                                       cfg.priority_beta, allocator)
    return ReplayBuffer(cfg.buffer_size, obs_shape, obs_dtype, allocator)
