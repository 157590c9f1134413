"""Weights from the learner to whoever acts with them: one layout, one publication rule, one client,
over three transports (after Acme's VariableSource/VariableClient and TorchRL's weight updaters).

- `FlatLayout` (core/networks.py): a network's parameters as one float32 vector, the only flatten and unflatten;
- `VariableSource` (learner side): `publish(arrays, version, block)` offers a version, `latest_version()`;
- `VariableClient` (acting side): `update()` copies a newer version into the acting network's
  parameters, in place (the policy reads them through numpy views), and says which it holds;
- `WeightPublisher`: the one publication rule: every `weight_sync_period` updates, a device learner's
  host copy refreshed first (core/device.py ActingWeights), a busy source retried at the next update;
  its callback tallies each publication (the watchdog's record of what every actor has yet to pick up).

Transports: shared memory (`channels.WeightChannel`, between processes; a learner that finds an actor
copying out does not wait for it), in-process (the same channel over plain arrays and a lock that is
never contended: `in_process_channel`), Ray (`RaySource`: one object-store reference per publication,
carried in every request; `RayClient` fetches it only when the version moved).
"""

from __future__ import annotations

import time
from typing import Callable, Protocol, Sequence

import numpy as np

from architectures.core.networks import FlatLayout

__all__ = ["ChannelClient", "FlatLayout", "NullLock", "RayClient", "RaySource", "VariableClient", "VariableSource",
           "WeightPublisher"]


class VariableSource(Protocol):
    """The learner's side of a weight hand-off."""

    def publish(self, arrays: Sequence[np.ndarray], version: int, block: bool = True) -> bool:
        """Offer `arrays` as `version`; False where the transport was busy (then nothing was published)."""
        ...

    def latest_version(self) -> int:
        """The newest version published (-1 before the first)."""
        ...


class VariableClient(Protocol):
    """The acting side: `version` is what its network holds now."""

    version: int

    def update(self) -> int | None:
        """Copy a newer published version into the acting parameters; the version now held, or None."""
        ...


class ChannelClient:
    """An actor's client of a WeightChannel (shared memory, or plain arrays in one process)."""

    def __init__(self, channel, params: Sequence[np.ndarray]):
        self.channel, self.params, self.version = channel, list(params), -1

    def update(self) -> int | None:
        new = self.channel.fetch(self.params, self.version)
        if new is not None:
            self.version = new
        return new


class RaySource:
    """Each publication one object in Ray's store; `current()` is what a request carries to an actor
    (in a list, so Ray does not fetch the reference unasked)."""

    def __init__(self, ray, layout: FlatLayout):
        self.ray, self.layout = ray, layout
        self.version, self.ref = -1, None

    def publish(self, arrays: Sequence[np.ndarray], version: int, block: bool = True) -> bool:
        self.version, self.ref = version, self.ray.put(self.layout.flatten(arrays))
        return True

    def latest_version(self) -> int:
        return self.version

    def current(self) -> list:
        return [self.version, self.ref]


class RayClient:
    """A Ray actor's client: `offer(current)` with what a request carried; `update()` fetches it only
    when the version moved."""

    def __init__(self, params: Sequence[np.ndarray], layout: FlatLayout):
        self.params, self.layout, self.version = list(params), layout, -1
        self.offered: list = [-1, None]

    def offer(self, current: list) -> None:
        self.offered = current

    def update(self) -> int | None:
        version, ref = self.offered
        if version == self.version or ref is None:  # every env step: one comparison, as the shared channel's peek
            return None
        import ray

        self.layout.unflatten_into(ray.get(ref), self.params)
        self.version = version
        return version


class WeightPublisher:
    """The one publication rule (see the module docstring). `acting`: core.device.ActingWeights, the
    host weights that act (the learner's own on the CPU); `source`: where actors get them, or None
    where the acting copy is all (single_env and the other one-process designs); `published(version,
    seconds)` after each publication that went through."""

    def __init__(self, acting, period: int, source: VariableSource | None = None,
                 published: Callable[[int, float], None] | None = None):
        self.acting, self.period, self.source, self.published = acting, period, source, published
        self.due = False  # on the period, or a busy source to try again

    def after_update(self, version: int) -> None:
        """After learner update `version`: publish on the period, or retry a publication the source refused."""
        self.due = self.due or version % self.period == 0
        if not self.due:
            return
        if self.source is None:
            if self.acting.separate:
                self.acting.publish(version)
            self.due = False
            return
        began = time.perf_counter()
        if self.acting.version != version:  # a device learner's weights: one copy to the host
            self.acting.publish(version)
        if self.source.publish(self.acting.arrays, version, block=False):  # never waits on an actor copying out
            self.due = False
            if self.published is not None:
                self.published(version, time.perf_counter() - began)

    def now(self, version: int) -> None:
        """Publish `version` at once, waiting for the source if need be (before the actors start, after a resume)."""
        self.acting.publish(version)
        if self.source is not None:
            self.source.publish(self.acting.arrays, version, block=True)
        self.due = False


class NullLock:
    """A lock nobody else takes: the in-process transport's, as Sample Factory's serial mode swaps its
    locks for no-ops."""

    def acquire(self, block: bool = True) -> bool:
        return True

    def release(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass
