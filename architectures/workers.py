"""Worker processes: start them safely, notice when one dies or hangs, and always stop them.

Design choices, each answering a known pitfall:
- `spawn`, never `fork`: forking after torch has started its thread pool can hang (the
  PyTorch Hogwild example uses spawn for this reason).
- Workers ignore SIGINT: Ctrl-C reaches the whole process group, and only the main process
  decides how to stop (it sets the STOP flag, joins, then terminates and kills stragglers).
- Workers watch their parent: if the main process is killed outright, they exit on their own
  at their next check (no orphans).
- A worker's exception travels to the main process as a formatted traceback on a queue; a
  worker that dies without one (SIGKILL, OOM) is reported by exit code. Either way the run
  fails with a message naming the worker, within one health check (0.2 s).
- A worker that makes no progress for `timeout_s` (no env step, no heartbeat in its waits) is
  reported as hung, so the learner never waits forever.
- Only the main process talks to Sacred: workers write counters into shared memory.
- A worker's checkpoint state travels on a one-way pipe of its own (`WorkerPool.collect`), sent
  while it is parked: the main process closes its copy of the write end, so a worker that dies
  mid-send is an EOF naming it, never a read that blocks forever.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
import warnings
from typing import Callable

import numpy as np

from architectures import janitor
from architectures.errors import RunError
from architectures.shared import DONE, FAILED, RUNNING, Control, attach

FAULT_ENV = "PDQN_FAULT"
"""Test hook: "<worker>:<kind>:<env_step>" makes one worker misbehave on purpose
(kinds: crash, kill, freeze_weights, hang). Read only by worker processes."""


WEIGHTS_STALE_STEPS = 1_000
"""Env steps an actor may take after a publication without picking it up before the run fails."""


def misbehave(kind: str) -> None:
    """Fault injection for the failure-handling tests (see workers.FAULT_ENV)."""
    if kind == "crash":
        raise RuntimeError("injected crash (PDQN_FAULT)")
    if kind == "kill":
        os.kill(os.getpid(), 9)
    if kind == "hang":
        time.sleep(3600)


class WorkerFailed(RuntimeError):
    """A worker process died, raised, hung, or stopped receiving weights."""


class Stopped(Exception):
    """Raised inside a worker when the main process asked it to stop, or disappeared."""


def worker_fault(index: int) -> tuple[str, int] | None:
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return None
    worker, kind, step = spec.split(":")
    return (kind, int(step)) if int(worker) == index else None


def run_worker(role: str, index: int, specs: dict, errors, body: Callable, *args) -> None:
    """A worker process's target: map the run's shared blocks, call `body(index, arrays, *args)`
    with the signal and error handling described above, and unmap them again."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    arrays, segments = attach(specs)
    status_row = arrays["status"][index]
    status_row["pid"] = os.getpid()
    try:
        body(index, arrays, *args)
    except Stopped:
        pass
    except RunError as err:  # an expected fault, named in one line: no traceback, the error itself
        status_row["state"] = FAILED
        errors.put((index, f"{role} {index} (pid {os.getpid()}): {err}", err))
        raise SystemExit(1)
    except BaseException:  # noqa: BLE001 - report everything, then exit non-zero
        status_row["state"] = FAILED
        errors.put((index, f"{role} {index} (pid {os.getpid()}) raised:\n{traceback.format_exc()}", None))
        raise SystemExit(1)
    finally:
        del status_row
        arrays.clear()  # drop our views so the segments can be unmapped now
        for segment in segments:
            segment.close()


class Waiter:
    """A worker's polite wait: sleeps in short slices, beats its heartbeat, and gives up when
    the main process sets STOP or is gone."""

    def __init__(self, control: Control, status_row, parent_pid: int, poll_s: float = 2e-4):
        self.control, self.status_row, self.parent_pid, self.poll_s = control, status_row, parent_pid, poll_s

    def check(self) -> None:
        if self.control[Control.STOP] or os.getppid() != self.parent_pid:
            raise Stopped

    def until(self, condition: Callable[[], bool]) -> float:
        """Block until condition() holds; returns the seconds spent waiting."""
        if condition():
            return 0.0
        began = time.perf_counter()
        while not condition():
            self.status_row["heartbeat"] += 1
            self.check()
            time.sleep(self.poll_s)
        return time.perf_counter() - began


class WorkerPool:
    """Starts `count` spawn processes running `target(index, *args)` and supervises them."""

    def __init__(self, role: str, status: np.ndarray, control: Control, timeout_s: float):
        self.role, self.status, self.control, self.timeout_s = role, status, control, timeout_s
        janitor.install()  # the pool's semaphores are unlinked even after a group kill
        self.ctx = mp.get_context("spawn")
        self.errors = self.ctx.SimpleQueue()
        self.procs: list[mp.process.BaseProcess] = []
        self._progress = np.zeros((len(status), 2), dtype=np.int64)
        self._progress_time = np.zeros(len(status))
        pipes = [self.ctx.Pipe(duplex=False) for _ in range(len(status))]
        self._state_readers = [reader for reader, _ in pipes]
        self.state_writers = [writer for _, writer in pipes]  # worker i sends its state on state_writers[i]

    def start(self, body: Callable, specs: dict, args_for: Callable[[int], tuple]) -> None:
        """Start worker i running `body(i, arrays, *args_for(i))` (run_worker) over the blocks `specs`."""
        for index in range(len(self.status)):
            args = (self.role, index, specs, self.errors, body, *args_for(index))
            proc = self.ctx.Process(target=run_worker, args=args, name=f"{self.role}-{index}", daemon=True)
            proc.start()
            self.procs.append(proc)
        for writer in self.state_writers:  # the children hold their own copies now
            writer.close()
        self._progress_time[:] = time.monotonic()

    def collect(self) -> list:
        """Every worker's state, as each parked worker sends it (its next message on its pipe)."""
        states = []
        for index, reader in enumerate(self._state_readers):
            while not reader.poll(0.05):
                self.check()
            try:
                states.append(reader.recv())
            except EOFError:
                self.check()  # it died: raise naming it
                raise WorkerFailed(f"{self.role} {index} closed its state pipe without sending its state") from None
        return states

    def wait_until(self, condition: Callable[[], bool], what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            self.check()
            if time.monotonic() > deadline:
                raise WorkerFailed(f"{self.role}s: timed out after {timeout_s:.0f} s waiting for {what}")
            time.sleep(0.01)

    def check(self) -> None:
        """Raise WorkerFailed naming the first worker that died, raised or hung."""
        now = time.monotonic()
        for index, proc in enumerate(self.procs):
            row = self.status[index]
            if proc.exitcode is not None and int(row["state"]) != DONE:
                message, error = self._death_message(index, proc)
                raise error if error is not None else WorkerFailed(message)
            progress = (int(row["env_steps"]), int(row["heartbeat"]))
            # Only a running worker can hang; start-up has its own, longer timeout (wait_until).
            if int(row["state"]) != RUNNING or progress != tuple(self._progress[index]):
                self._progress[index] = progress
                self._progress_time[index] = now
            elif now - self._progress_time[index] > self.timeout_s:
                raise WorkerFailed(f"{self.role} {index} (pid {proc.pid}) made no progress for "
                                   f"{self.timeout_s:.0f} s at {progress[0]:,} env steps: hung (worker_timeout_s)")

    def _death_message(self, index: int, proc) -> tuple[str, RunError | None]:
        """What to say of a dead worker, and the RunError it raised, if it raised one (the run
        then stops with that error's one line, e.g. a non-finite env value or a divergence)."""
        time.sleep(0.05)  # let a raising worker's traceback reach the queue
        reports = {}
        while not self.errors.empty():
            worker, text, error = self.errors.get()
            reports[worker] = text, error
        if index in reports and reports[index][1] is not None:
            return reports[index]
        code = proc.exitcode
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        steps = int(self.status[index]["env_steps"])
        message = f"{self.role} {index} (pid {proc.pid}) {how} after {steps:,} env steps"
        return message + (f"\n{reports[index][0]}" if index in reports else ""), None

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask every worker to stop, then terminate and kill whatever is left. Idempotent."""
        self.control[Control.STOP] = 1
        deadline = time.monotonic() + grace_s
        for proc in self.procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for proc in self.procs:
            proc.close()
        self.procs = []
        self.errors.close()
        for connection in (*self._state_readers, *self.state_writers):
            connection.close()  # idempotent
        self._state_readers = []


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def warn_if_oversubscribed(num_workers: int, what: str) -> None:
    cores = available_cores()
    if num_workers > cores:
        warnings.warn(f"num_workers={num_workers} {what} on {cores} CPU cores: they will time-share the "
                      f"cores, so throughput cannot scale past {cores}", RuntimeWarning, stacklevel=3)


def check_weights_flow(status: np.ndarray, pending: np.ndarray, since: np.ndarray, latest: int) -> None:
    """Fail loudly if an actor keeps acting but stops picking up published weights (the silent
    failure TorchRL once had for one worker, pytorch/rl#3587)."""
    for i in range(len(status)):
        if pending[i] < 0:
            continue
        if status[i]["weights_version"] >= pending[i]:
            pending[i] = -1
        elif status[i]["env_steps"] - since[i] > WEIGHTS_STALE_STEPS:
            raise WorkerFailed(f"actor {i} (pid {status[i]['pid']}) stopped receiving weights: it acts with "
                               f"version {status[i]['weights_version']} after {WEIGHTS_STALE_STEPS:,} env steps "
                               f"since version {pending[i]} was published (latest {latest})")
