"""Counters, timers and the reporter interface through which architectures emit metrics.

Architectures never import Sacred: they call a `Reporter`, and `experiments/` decides where
the numbers go (Sacred metrics, a progress bar, nothing).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Protocol


class Timers:
    """Accumulated seconds and call counts per named phase (acting, env_step, update, ...)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def add(self, name: str, seconds: float, calls: int = 1) -> None:
        self.seconds[name] += seconds
        self.calls[name] += calls

    def state_dict(self) -> dict:
        return {"seconds": dict(self.seconds), "calls": dict(self.calls)}

    def load_state_dict(self, state: dict) -> None:
        self.seconds.clear()
        self.calls.clear()
        self.seconds.update(state["seconds"])
        self.calls.update(state["calls"])

    def summary(self) -> dict[str, dict[str, float]]:
        """name -> {seconds, calls, us_per_call}."""
        return {name: {"seconds": s, "calls": self.calls[name],
                       "us_per_call": 1e6 * s / self.calls[name] if self.calls[name] else 0.0}
                for name, s in sorted(self.seconds.items())}


class Stopwatch:
    """Wall-clock time with pauses: throughput is computed on the unpaused time only."""

    def __init__(self, already: float = 0.0) -> None:
        """`already`: seconds counted before (a resumed run continues its clock)."""
        self._start = time.perf_counter() - already
        self._paused = 0.0
        self._pause_began: float | None = None

    def pause(self) -> None:
        self._pause_began = time.perf_counter()

    def resume(self) -> None:
        assert self._pause_began is not None
        self._paused += time.perf_counter() - self._pause_began
        self._pause_began = None

    @property
    def running(self) -> bool:
        return self._pause_began is None

    def elapsed(self) -> float:
        now = self._pause_began if self._pause_began is not None else time.perf_counter()
        return now - self._start - self._paused


class Reporter(Protocol):
    def scalar(self, name: str, value: float, env_steps: int) -> None: ...
    def holdout(self, result: dict) -> None: ...
    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None: ...


class NullReporter:
    def scalar(self, name: str, value: float, env_steps: int) -> None:
        pass

    def holdout(self, result: dict) -> None:
        pass

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        pass


class PrintReporter(NullReporter):
    """Progress lines on stderr, for runs outside Sacred (at most one every `interval` seconds)."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self._last_print = float("-inf")

    def holdout(self, result: dict) -> None:
        print(f"holdout @ {result['env_steps']:>9,} env steps: return {result['return_mean']:.1f}", file=sys.stderr)

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        now = time.monotonic()
        if now - self._last_print < self.interval and env_steps < total:
            return
        self._last_print = now
        last = "-" if last_return is None else f"{last_return:.1f}"
        print(f"{env_steps:>9,}/{total:,} env steps  {steps_per_sec:,.0f} steps/s  last holdout {last}",
              file=sys.stderr)
