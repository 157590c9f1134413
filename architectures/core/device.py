"""Where the learner's tensors live, and the few places they cross to the host.

A learner on CUDA keeps its networks, Adam state and replay on the device; acting stays on the
CPU, where one env's greedy action through numpy views (`networks.GreedyPolicy`) costs a
fraction of a launch, a copy and a synchronisation per step on a GPU
(docs/design-notes.md#networks). So every design with a device learner acts with
`ActingWeights.net`, a CPU copy of the online network refreshed by one device-to-host copy of
all its parameters per publication, every `weight_sync_period` updates and before every
holdout. On the CPU, `ActingWeights.net` IS the learner's network and publishing costs nothing,
so CPU runs are exactly what they were.

Host reads of device statistics (loss, Q, policy lag) go through `host_float` / `host_array`,
at the log's cadence, never once per update.

The `meta` device (tensors with shapes and no data) is the tests' stand-in for an accelerator
on a machine without one: any `.numpy()`, `.item()`, `float()` or host copy of a meta tensor
raises, and so does an op that mixes it with a CPU tensor, where CUDA would fail or synchronise
(tests/test_device.py). The sanctioned crossings here know it: a meta tensor reads as zeros.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from architectures.core.networks import FlatLayout

HOST = torch.device("cpu")


def on_host(device: torch.device | str) -> bool:
    return torch.device(device).type == "cpu"


def check_device(device: torch.device) -> None:
    """A CUDA device that is not there fails here, in one line, before anything is built on it."""
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {str(device)!r} requested but torch.cuda.is_available() is False")


def host_float(t: torch.Tensor | float | None) -> float:
    """A device scalar read on the host (a synchronisation on CUDA; call it at the log's cadence)."""
    if t is None:
        return float("nan")
    if isinstance(t, torch.Tensor) and t.is_meta:
        return 0.0
    return float(t.detach()) if isinstance(t, torch.Tensor) else float(t)


def host_array(t: torch.Tensor) -> np.ndarray:
    """A device tensor copied to a host numpy array (a synchronisation on CUDA)."""
    if t.is_meta:
        return np.zeros(tuple(t.shape), dtype=torch.empty((), dtype=t.dtype).numpy().dtype)
    return t.detach().cpu().numpy()


class ActingWeights:
    """The online network as the host acts with it (see the module docstring).

    `net` is a CPU module; `arrays` are numpy views of its parameters, in `parameters()` order
    (what actor_learner publishes to its actors). For a learner on the host both are the
    learner's own and `publish` does nothing; otherwise `net`'s parameters are views into one
    flat host buffer (pinned on CUDA) and `publish` gathers the device parameters into one flat
    device buffer (one kernel) and copies it to the host (one copy). When it publishes is
    transport/variables.py's WeightPublisher's rule."""

    def __init__(self, online: nn.Module, copy_on_host: bool = False):
        """`copy_on_host` keeps a copy of a CPU learner's weights too (tests of the publication)."""
        self.source = list(online.parameters())
        self.device = self.source[0].device
        self.version = 0  # the learner version `net` holds, as far as `publish` was told
        if on_host(self.device) and not copy_on_host:
            self.net, self.flat_host, self.flat_device = online, None, None
        else:
            total = sum(p.numel() for p in self.source)
            pin = self.device.type == "cuda"
            self.flat_host = torch.zeros(total, dtype=torch.float32, pin_memory=pin)
            self.flat_device = torch.empty(total, dtype=torch.float32, device=self.device)
            self.net = copy.deepcopy(online).to_empty(device=HOST).requires_grad_(False)
            params = list(self.net.parameters())
            for p, view in zip(params, FlatLayout([tuple(p.shape) for p in params]).views(self.flat_host)):
                p.data = view  # each parameter becomes a view into the flat buffer
            self.publish(0)
        self.arrays = [p.detach().numpy() for p in self.net.parameters()]

    @property
    def separate(self) -> bool:
        """Whether acting reads a copy (a device learner) rather than the learner's own weights."""
        return self.flat_host is not None

    def publish(self, version: int) -> None:
        """Refresh `net` from the learner's parameters (learner update `version`)."""
        self.version = version
        if self.flat_host is None:
            return
        with torch.no_grad():
            torch.cat([p.detach().reshape(-1) for p in self.source], out=self.flat_device)
            if not self.device.type == "meta":  # no data to copy: the tests' stand-in device
                self.flat_host.copy_(self.flat_device)
