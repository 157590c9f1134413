"""Diagnostics every design can log: policy lag, per-worker shares, and the bottleneck.

They answer the reporting user's open questions directly:
- policy lag (learner version at sampling minus the version whose weights chose the action):
  are the samples the learner trains on stale?
- per-worker shares of the replay and of the sampled batches, per-worker episode counts and
  lengths: do short-episode or fast workers dominate the data?
- the time breakdown per role and the role that is busy while the others wait: is the learner
  or the hand-off the bottleneck?
"""

from __future__ import annotations

import numpy as np


class PolicyLag:
    """Lag summary of sampled transitions, in learner updates.

    Mean and max are exact over every sampled transition; percentiles come from a reservoir of
    whole batches (bounded memory for 40M-step runs). `window()` summarises the lags since the
    last call, for logging on a cadence.
    """

    def __init__(self, reservoir_batches: int = 4096, seed: int = 0):
        self.capacity = reservoir_batches
        self.rng = np.random.default_rng(seed)
        self.reservoir: list[np.ndarray] = []
        self.batches = 0
        self.total = 0.0
        self.count = 0
        self.max = 0
        self._window: list[np.ndarray] = []
        self.last_window: np.ndarray | None = None

    def record(self, learner_version: int, versions: np.ndarray) -> None:
        lags = learner_version - versions  # (B,) updates
        self.batches += 1
        self.total += float(lags.sum())
        self.count += len(lags)
        self.max = max(self.max, int(lags.max()))
        if len(self.reservoir) < self.capacity:
            self.reservoir.append(lags)
        else:  # reservoir sampling over batches: every batch kept with equal probability
            slot = int(self.rng.integers(self.batches))
            if slot < self.capacity:
                self.reservoir[slot] = lags
        if len(self._window) < 256:
            self._window.append(lags)

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "reservoir": list(self.reservoir), "batches": self.batches,
                "total": self.total, "count": self.count, "max": self.max}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.reservoir = list(state["reservoir"])
        self.batches, self.total, self.count, self.max = (state["batches"], state["total"], state["count"],
                                                          state["max"])

    @staticmethod
    def _summarise(chunks: list[np.ndarray]) -> dict[str, float]:
        if not chunks:
            return {"mean": float("nan"), "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
        lags = np.concatenate(chunks)
        p50, p95 = np.percentile(lags, [50, 95])
        return {"mean": float(lags.mean()), "p50": float(p50), "p95": float(p95), "max": float(lags.max())}

    def window(self) -> dict[str, float]:
        self.last_window = np.concatenate(self._window) if self._window else None  # a curve writer's histogram
        out = self._summarise(self._window)
        self._window = []
        return out

    def summary(self) -> dict[str, float]:
        out = self._summarise(self.reservoir)
        if self.count:
            out["mean"], out["max"] = self.total / self.count, float(self.max)
        return out


def shares(sources: np.ndarray, num_sources: int) -> list[float]:
    """Fraction of `sources` (worker/env indices) that came from each source."""
    counts = np.bincount(sources, minlength=num_sources)[:num_sources]
    total = counts.sum()
    return (counts / total).tolist() if total else [0.0] * num_sources


CORES_FULL = 0.9
"""A run whose processes kept this share of its cores busy (its `cpu`) had no CPU to spare."""


def name_bottleneck(train_seconds: float, roles: dict[str, dict[str, float]], cpu: dict | None = None) -> dict:
    """The role that is busy while the others wait.

    `roles` maps a role ("learner", "actors", "envs") to its seconds per component for one
    process of that role (average over processes of the same role); a component named `wait`
    is idle time. The bottleneck is the role with the largest busy fraction of the training
    time; the summary also names its costliest component, and, where the run's processes kept
    CORES_FULL of the cores busy (`cpu`), the cores: past the cores a role's time is partly a
    wait for a CPU (tests/test_diagnostics.py).
    """
    busy = {role: max(0.0, 1.0 - parts.get("wait", 0.0) / train_seconds) for role, parts in roles.items()}
    role = max(busy, key=busy.get)
    parts = {k: v for k, v in roles[role].items() if k != "wait"}
    component = max(parts, key=parts.get) if parts else "-"
    others = ", ".join(f"{r} busy {100 * b:.0f}%" for r, b in busy.items() if r != role)
    summary = f"{role} (busy {100 * busy[role]:.0f}% of the time, mostly {component}); {others}"
    out = {"role": role, "component": component, "busy_fraction": busy, "summary": summary}
    if cpu:  # the run's processes' CPU over its training time (metrics.cpu_summary)
        out["cores_busy"] = cpu["cores_busy"]
        if cpu["cores_busy"] >= CORES_FULL * cpu["cores"]:  # a busy role's wait here is a wait for a CPU too
            out["summary"] = f"{summary}; the cores: {cpu['cores_busy']:.2f} of {cpu['cores']} busy"
    return out
