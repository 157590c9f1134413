"""Whether other work shared the machine while plan measured: a plan measured beside busy processes
prices every component too high and would print its curve as confidently as on an idle machine.

The machine's busy CPU seconds (psutil's system-wide times) less those of plan's own process tree
(itself, its live descendants and the children it has reaped), over the wall time: the cores other
processes kept busy on average. Niced processes count: they still take the cores plan's measuring
processes leave idle between their steps.
"""

from __future__ import annotations

import dataclasses
import os
import time

import psutil

DISTURBED_CORES = 0.25
"""Other processes' average busy cores from which plan says its measurements were disturbed: a
quarter of a core is more than this machine's idle background (a few percent) and less than any
co-runner that would move a component's cost."""


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (guest time is inside user time)."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def own_seconds() -> float:
    """CPU seconds of this process, the children it has reaped, and its live descendants."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:  # gone between the listing and the read: its time is in its parent's
            continue
        total += t.user + t.system + t.children_user + t.children_system  # and what it has reaped
    return total


@dataclasses.dataclass
class LoadWatch:
    """Started when plan starts measuring; `other_cores()` at any later point."""

    started: float = dataclasses.field(default_factory=time.monotonic)
    busy: float = dataclasses.field(default_factory=busy_seconds)
    own: float = dataclasses.field(default_factory=own_seconds)

    def other_cores(self) -> float:
        """The cores other processes kept busy on average since the watch started."""
        wall = max(time.monotonic() - self.started, 1e-9)
        return max(0.0, (busy_seconds() - self.busy) - (own_seconds() - self.own)) / wall


def disturbance(other_cores: float, cores: int) -> dict:
    """What plan.json records of the window, and the factor that widens each interval's fast end: a
    component measured while others held `other_cores` of `cores` ran up to cores / (cores -
    other_cores) slower than alone, so the rate it predicts may be that much too low."""
    disturbed = other_cores >= DISTURBED_CORES
    free = max(cores - other_cores, 0.5)
    return {"other_cores": round(other_cores, 3), "cores": cores, "disturbed": disturbed,
            "widen_fast_end_by": round(cores / free, 3) if disturbed else 1.0}


def disturbance_line(record: dict) -> str | None:
    """The one line plan prints when its measurements were disturbed, or None."""
    if not record["disturbed"]:
        return None
    return (f"plan: its measurements were disturbed: other processes kept {record['other_cores']:.2f} of "
            f"{record['cores']} cores busy on average while it measured, so every cost may be too high; each "
            f"prediction's fast end is widened by x{record['widen_fast_end_by']:.2f} (plan.json `window`); "
            "measure again on an idle machine for a curve to trust")
