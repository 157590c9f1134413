"""The replay's mirror on the learner's device, sampled there (a CUDA learner's replay).

The host `ReplayBuffer` stays the one record of what was stored (checkpoints, per-source
diagnostics, what actors hand off); this mirror holds the same records as raw bytes, one row a
record, on the device. `sync()` copies the rows stored since the last sync, in at most two
slices (the ring may have wrapped), and `sample()` draws a batch there: indices from uniforms
on the device times the fill, one gather of whole rows, and each field a typed view of its bytes.
Nothing is copied from the host per update but the rows that are new, and nothing is read back.

Sampling is graph-safe (core/device_step.py captures it in a CUDA graph): the fill is a device
scalar set outside the graph, and the uniforms come from a pool drawn eagerly with the replay's
own generator, `UNIFORM_POOL` batches at a time, read at a device cursor. So a run samples the
same indices with or without the graph; they are not the host replay's indices (another RNG).
"""

from __future__ import annotations

import numpy as np
import torch

from architectures.core.replay import ReplayBuffer

UNIFORM_POOL = 1024
"""Batches of uniforms drawn at once (CartPole at batch 128: 1 MB of float64 on the device)."""
FIELDS = ("obs", "next_obs", "action", "reward", "discount", "source", "version")


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, dtype=dtype)).dtype


class DeviceReplay:
    """A device mirror of `host`'s records (see the module docstring)."""

    def __init__(self, host: ReplayBuffer, device: torch.device, batch_size: int, seed: int):
        self.host, self.device, self.batch_size = host, device, batch_size
        itemsize = host.dtype.itemsize
        self.rows = torch.zeros((host.capacity, itemsize), dtype=torch.uint8, device=device)  # (N, bytes)
        self.fields = {}  # name -> (first byte, bytes, torch dtype, shape)
        for name in FIELDS:
            dtype, offset = host.dtype.fields[name][:2]
            self.fields[name] = (offset, dtype.itemsize, _torch_dtype(dtype.base), dtype.shape)
        self.synced = 0  # host.added at the last sync
        self.fill = torch.zeros((), dtype=torch.float64, device=device)  # host.size, as the graph reads it
        self.generator = None if device.type == "meta" else torch.Generator(device=device).manual_seed(seed)
        self.uniforms = torch.zeros((UNIFORM_POOL, batch_size), dtype=torch.float64, device=device)
        self.cursor = torch.zeros(1, dtype=torch.int64, device=device)  # the next pool row, on the device
        self.drawn = UNIFORM_POOL  # pool rows used, counted on the host: the pool is drawn before the first sample

    def sync(self) -> None:
        """Copy the host rows stored since the last sync (all of them once more than capacity)."""
        host = self.host
        new = min(host.added - self.synced, host.capacity)
        if new <= 0:
            return
        end = host.cursor
        start = (end - new) % host.capacity
        slices = [(start, end)] if start < end else [(start, host.capacity), (0, end)]
        raw = host.data.view(np.uint8).reshape(host.capacity, -1)  # (N, bytes), a view
        for a, b in slices:
            if b > a:
                self.rows[a:b].copy_(torch.from_numpy(raw[a:b]), non_blocking=False)
        self.synced = host.added
        self.fill.fill_(float(host.size))

    def prepare(self, samples: int = 1) -> None:
        """Outside any graph, before `samples` samples: draw a fresh pool when it would run out."""
        if self.drawn + samples > UNIFORM_POOL:
            torch.rand(self.uniforms.shape, dtype=torch.float64, generator=self.generator, out=self.uniforms)
            self.cursor.zero_()
            self.drawn = 0
        self.drawn += samples

    def sample(self) -> dict[str, torch.Tensor]:
        """One batch on the device, with no host read: field -> (B, *shape). Call `prepare` first."""
        uniforms = self.uniforms.index_select(0, self.cursor).squeeze(0)         # (B,)
        self.cursor.add_(1)
        indices = (uniforms * self.fill).long()                                   # (B,) in [0, size)
        rows = self.rows.index_select(0, indices)                                 # (B, bytes)
        out = {}
        for name, (offset, nbytes, dtype, shape) in self.fields.items():
            out[name] = rows[:, offset:offset + nbytes].view(dtype).reshape(len(indices), *shape)
        return out

    def state_dict(self) -> dict:
        """The sampling stream's position (the rows themselves are the host replay's)."""
        state = {"uniforms": self.uniforms.cpu() if self.device.type != "meta" else None,
                 "cursor": int(self.cursor.cpu()) if self.device.type != "meta" else 0, "drawn": self.drawn,
                 "generator": self.generator.get_state() if self.generator is not None else None}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue the sampling stream as saved; every host row is copied again at the next sync."""
        if state["uniforms"] is not None:
            self.uniforms.copy_(state["uniforms"])
            self.cursor.fill_(state["cursor"])
        if state["generator"] is not None and self.generator is not None:
            self.generator.set_state(state["generator"])
        self.drawn = state["drawn"]
        self.synced = max(0, self.host.added - self.host.size)
