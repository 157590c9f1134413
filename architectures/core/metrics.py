"""Counters, timers and the reporter interface through which architectures emit metrics.

Architectures never import Sacred: they call a `Reporter`, and `experiments/` decides where
the numbers go (Sacred metrics, a progress bar, nothing).
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from typing import Callable, Protocol

import psutil


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


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, its children's not counted) the kernel has counted for process
    `pid`, through psutil (on Linux /proc/<pid>/stat, in 10 ms steps here), or None where it
    cannot be read (a process gone, one we may not read)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.Error, ValueError):  # NoSuchProcess (ZombieProcess among them), AccessDenied
        return None
    return times.user + times.system


class CpuMeter:
    """CPU seconds of this process (all its threads, `time.process_time`) and of its workers
    (their pids, read through psutil), so a run can say how many of the machine's cores it kept busy:
    past the cores, the workers' acting, hand-off and wake-ups time-share them with the learner
    (docs/plan-and-cost-model.md). A worker that has exited keeps the last count read for it."""

    def __init__(self, workers: Callable[[], list[int]] | None = None) -> None:
        self._workers = workers
        self._last: dict[int, float] = {}

    def read(self) -> dict[str, float]:
        for pid in (self._workers() if self._workers else []):
            seconds = process_cpu_seconds(int(pid))
            if seconds is not None:
                self._last[int(pid)] = seconds
        return {"main": time.process_time(), "workers": sum(self._last.values())}


class Stopwatch:
    """Wall-clock time with pauses: throughput is computed on the unpaused time only. With a
    `CpuMeter` it counts the CPU seconds spent over the same unpaused time, in this process only
    (a resumed run's earlier CPU is not carried over: `cpu()` is for this process's stretch,
    `segment_elapsed()` its wall time)."""

    def __init__(self, already: float = 0.0, cpu: CpuMeter | None = None) -> None:
        """`already`: seconds counted before (a resumed run continues its clock)."""
        self._already = already
        self._start = time.perf_counter() - already
        self._paused = 0.0
        self._pause_began: float | None = None
        self._cpu = cpu
        self._cpu_start = cpu.read() if cpu else None
        self._cpu_paused = dict.fromkeys(self._cpu_start or (), 0.0)
        self._cpu_pause_began: dict[str, float] | None = None

    def pause(self) -> None:
        self._pause_began = time.perf_counter()
        if self._cpu:
            self._cpu_pause_began = self._cpu.read()

    def resume(self) -> None:
        assert self._pause_began is not None
        self._paused += time.perf_counter() - self._pause_began
        self._pause_began = None
        if self._cpu:
            now = self._cpu.read()
            for key, value in now.items():
                self._cpu_paused[key] += value - self._cpu_pause_began[key]
            self._cpu_pause_began = None

    @property
    def running(self) -> bool:
        return self._pause_began is None

    def elapsed(self) -> float:
        now = self._pause_began if self._pause_began is not None else time.perf_counter()
        return now - self._start - self._paused

    def segment_elapsed(self) -> float:
        """Unpaused wall seconds in this process (without the resumed run's earlier seconds)."""
        return self.elapsed() - self._already

    def cpu(self) -> dict[str, float] | None:
        """CPU seconds over the unpaused time: {"main": ..., "workers": ...}, or None without a meter."""
        if not self._cpu:
            return None
        now = self._cpu_pause_began if self._cpu_pause_began is not None else self._cpu.read()
        return {key: max(0.0, value - self._cpu_start[key] - self._cpu_paused[key]) for key, value in now.items()}


def cpu_summary(clock: Stopwatch, env_steps: int) -> dict | None:
    """What the run's processes took of the machine over its training time: CPU seconds of the
    main process and of its workers, the cores they kept busy on average against the cores this
    run may use, and each side's CPU per env step. A run that keeps fewer cores busy than it has
    while its roles wait for a CPU is bound by latency, not by the cores' capacity (docs/plan-and-cost-model.md;
    tests/test_cpu.py). None without a meter."""
    cpu, seconds = clock.cpu(), clock.segment_elapsed()
    if cpu is None or seconds <= 0:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    steps = max(1, env_steps)
    return {"main_seconds": cpu["main"], "workers_seconds": cpu["workers"], "seconds": seconds,
            "cores_busy": (cpu["main"] + cpu["workers"]) / seconds, "cores": cores,
            "main_us_per_env_step": 1e6 * cpu["main"] / steps, "workers_us_per_env_step": 1e6 * cpu["workers"] / steps}


class Reporter(Protocol):
    """Where a run's numbers go. Optional, looked up with getattr: `histogram(name, values,
    env_steps)`, a distribution at a log, and `text(name, value, env_steps)`, a line such as the
    bound a run's breakdown names (only curve writers keep them: Sacred's metrics are scalars);
    `resumed(env_steps)`, said before a resumed run re-reports its holdouts so a curve writer can
    drop the points it already has; `trained(net)`, which Run.result hands a CPU copy
    of the trained online network (the Python API keeps it)."""

    def scalar(self, name: str, value: float, env_steps: int) -> None: ...
    def holdout(self, result: dict) -> None: ...
    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None: ...


class NullReporter:
    def scalar(self, name: str, value: float, env_steps: int) -> None:
        pass

    def histogram(self, name: str, values, env_steps: int) -> None:
        pass

    def resumed(self, env_steps: int) -> None:
        pass

    def holdout(self, result: dict) -> None:
        pass

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        pass

    def trained(self, net) -> None:
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


class Reporters:
    """Several reporters as one: each call goes to every one that has the method (a curve
    writer beside Sacred's reporter, beside the API's keeper)."""

    def __init__(self, *reporters) -> None:
        self.reporters = [r for r in reporters if r is not None]

    def _each(self, method: str, *args) -> None:
        for reporter in self.reporters:
            call = getattr(reporter, method, None)
            if call is not None:
                call(*args)

    def scalar(self, name: str, value: float, env_steps: int) -> None:
        self._each("scalar", name, value, env_steps)

    def histogram(self, name: str, values, env_steps: int) -> None:
        self._each("histogram", name, values, env_steps)

    def text(self, name: str, value: str, env_steps: int) -> None:
        self._each("text", name, value, env_steps)

    def holdout(self, result: dict) -> None:
        self._each("holdout", result)

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        self._each("progress", env_steps, total, steps_per_sec, last_return)

    def resumed(self, env_steps: int) -> None:
        self._each("resumed", env_steps)

    def trained(self, net) -> None:
        self._each("trained", net)
