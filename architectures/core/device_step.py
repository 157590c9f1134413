"""A device learner's whole update with nothing read back, eager or replayed as one CUDA graph.

One `DeviceStep()` samples a batch from the device replay, computes the TD gradient, clips it,
takes the Adam step, and sums the loss and the policy-lag diagnostics into device tensors: no
host synchronisation, so the host runs ahead queueing work while the GPU computes. The learner's
version and the target sync stay on the host (`DQNLearner.advance`), outside the captured region.
`read()` copies the sums to the host at the log's cadence.

With `cuda_graph`, the first call captures `_step` in a `torch.cuda.CUDAGraph` (after a warm-up
on a side stream, as PyTorch's whole-network capture does; the warm-up's updates are undone) and
every call replays it: one launch for the whole update instead of dozens. The eager path runs the
same `_step`, so the two give the same numbers (tests/test_device.py checks the eager step against
the host update; the graph itself needs CUDA: tests marked `cuda`).
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from architectures.core.device import host_array, host_float
from architectures.core.device_replay import DeviceReplay
from architectures.core.diagnostics import PolicyLag

WARMUP_STEPS = 3
"""Eager updates on a side stream before capture (cuBLAS and the allocator settle), undone after."""


class DeviceStep:
    """See the module docstring. `sources` > 0 keeps the per-source diagnostics (actor_learner,
    vector_env): each sampled transition's policy lag and which source it came from."""

    def __init__(self, learner, replay: DeviceReplay, sources: int = 0, graph: bool = False):
        self.learner, self.replay, self.use_graph = learner, replay, graph
        device, b = learner.device, replay.batch_size
        self.loss_sum = torch.zeros((), dtype=torch.float32, device=device)
        self.version = torch.full((), learner.version, dtype=torch.int64, device=device)
        self.sources = sources
        self.lag_sum = torch.zeros((), dtype=torch.float64, device=device)
        self.lag_max = torch.zeros((), dtype=torch.int64, device=device)
        self.last_lags = torch.zeros(b, dtype=torch.int64, device=device)
        self.sampled = torch.zeros(max(sources, 1), dtype=torch.int64, device=device)
        self._ones = torch.ones(b, dtype=torch.int64, device=device)
        self.graph = None

    def _step(self) -> None:
        """Everything one update does on the device: the region a CUDA graph captures."""
        batch = self.replay.sample()
        loss = self.learner.gradient(batch)
        self.learner.step_optimizer()
        self.loss_sum.add_(loss)
        if self.sources:
            lags = self.version - batch["version"]                                # (B,) updates
            self.lag_sum.add_(lags.sum())
            torch.maximum(self.lag_max, lags.max(), out=self.lag_max)
            self.last_lags.copy_(lags)
            self.sampled.index_add_(0, batch["source"].long(), self._ones)
        self.version.add_(1)

    def __call__(self) -> None:
        """One update; the host's part (version, target sync) after the device's."""
        if self.use_graph and self.graph is None:
            self._capture()
        self.replay.prepare()
        if self.graph is not None:
            self.graph.replay()
        else:
            self._step()
        self.learner.advance()

    def _capture(self) -> None:
        learner, replay = self.learner, self.replay
        if learner.device.type != "cuda":
            raise ValueError(f"cuda_graph: a CUDA graph needs device=cuda (the learner is on {learner.device})")
        saved = copy.deepcopy(learner.state_dict())
        sums = [t.clone() for t in self._sums()]
        replay.prepare(WARMUP_STEPS + 1)
        cursor, drawn = replay.cursor.clone(), replay.drawn
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self._step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._step()
        # Undo the warm-up: the parameters, Adam, the sums and the sampling cursor as they were.
        static_q, static_norm = learner.last_q_taken, learner.last_grad_norm
        learner.load_state_dict(saved)
        learner.last_q_taken, learner.last_grad_norm = static_q, static_norm  # the graph writes these
        for dst, src in zip(self._sums(), sums):
            dst.copy_(src)
        replay.cursor.copy_(cursor)
        replay.drawn = drawn - 1  # __call__ prepares the first replayed sample
        self.graph = graph

    def _sums(self) -> list[torch.Tensor]:
        return [self.loss_sum, self.version, self.lag_sum, self.lag_max, self.last_lags, self.sampled]

    def sync_version(self) -> None:
        """After a restore: the device's version is the learner's."""
        self.version.fill_(self.learner.version)

    def read_loss(self) -> float:
        """The TD losses summed since the last read (a host synchronisation), then zeroed."""
        value = host_float(self.loss_sum)
        self.loss_sum.zero_()
        return value

    def read_sampled(self) -> np.ndarray:
        return host_array(self.sampled)[:self.sources]


class DeviceLag:
    """`diagnostics.PolicyLag`'s interface over a `DeviceStep`'s sums: the mean and max over every
    sampled transition exactly; the percentiles from the latest batch at each read (one batch per
    log, where the host's PolicyLag keeps every batch it sees)."""

    RESERVOIR = 4096

    def __init__(self, step: DeviceStep):
        self.step = step
        self.first = step.learner.version  # the sums count the updates since this version
        self.read_at = self.first  # the learner version at the last read
        self.window_sum = 0.0  # lag_sum at the last window
        self.reservoir: list[np.ndarray] = []
        self._window: list[np.ndarray] = []

    def _pull(self) -> None:
        version = self.step.learner.version
        if version != self.read_at:
            self.read_at = version
            lags = host_array(self.step.last_lags)
            self._window.append(lags)
            if len(self.reservoir) < self.RESERVOIR:
                self.reservoir.append(lags)

    def window(self) -> dict[str, float]:
        updates_before = self.read_at
        self._pull()
        out = PolicyLag._summarise(self._window)
        total = host_float(self.step.lag_sum)
        if self._window and self.read_at > updates_before:
            out["mean"] = (total - self.window_sum) / ((self.read_at - updates_before) * len(self.step.last_lags))
        self.window_sum, self._window = total, []
        return out

    def summary(self) -> dict[str, float]:
        self._pull()
        out = PolicyLag._summarise(self.reservoir)
        count = (self.step.learner.version - self.first) * len(self.step.last_lags)
        if count:
            out["mean"], out["max"] = host_float(self.step.lag_sum) / count, float(host_float(self.step.lag_max))
        return out

    def state_dict(self) -> dict:
        return {"first": self.first, "lag_sum": host_float(self.step.lag_sum),
                "lag_max": int(host_float(self.step.lag_max)), "reservoir": list(self.reservoir)}

    def load_state_dict(self, state: dict) -> None:
        self.first, self.reservoir = state["first"], list(state["reservoir"])
        self.step.lag_sum.fill_(state["lag_sum"])
        self.step.lag_max.fill_(state["lag_max"])
        self.read_at, self.window_sum = self.step.learner.version, state["lag_sum"]
