"""Worker processes: start them safely, notice when one dies or hangs, and always stop them.

Design choices, each answering a known pitfall:
- `spawn`, never `fork`: forking after torch has started its thread pool can hang (the
  PyTorch Hogwild example uses spawn for this reason).
- Workers ignore SIGINT: Ctrl-C reaches the whole process group, and only the main process
  decides how to stop (it sets the STOP flag, joins, then terminates and kills stragglers).
- Workers watch their parent: if the main process is killed outright, they exit on their own
  at their next check, and the kernel kills them (PR_SET_PDEATHSIG) where no check comes: a
  worker blocked on a lock the killed main process held would otherwise live on (no orphans).
- A worker's exception travels to the main process on a queue, its traceback as text beside
  it; a worker that dies without one (SIGKILL, OOM) is reported by exit code. Either way the run
  fails with a one-line message naming the worker, within one health check (0.2 s), and the
  traceback goes to the run's record as the error's cause (errors.RunError's `detail`).
- A worker that makes no progress for `timeout_s` (no env step, no heartbeat in its waits) is
  reported as hung, so the learner never waits forever.
- Only the main process talks to Sacred: workers write counters into shared memory.
- A worker's checkpoint state travels on a one-way pipe of its own (`WorkerPool.collect`), sent
  while it is stopped: the main process closes its copy of the write end, so a worker that dies
  mid-send is an EOF naming it, never a read that blocks forever.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from architectures.core import limits
from architectures.core.errors import RunError, RunWarning
from architectures.core.lifetime import die_with_parent
from architectures.transport import reaper
from architectures.transport.notifier import Notifier, Stopped, Waiter, main_flag
from architectures.transport.shared import DONE, FAILED, READY, RUNNING, STATUS_DTYPE, Control, SharedBlocks, attach

FAULT_ENV = "PDQN_FAULT"
"""Test hook: "<worker>:<kind>:<env_step>" makes one worker misbehave on purpose
(kinds: crash, kill, freeze_weights, hang). Read only by worker processes."""


WEIGHTS_STALE_STEPS = 1_000
"""Env steps an actor may take after a publication without picking it up before the run fails."""


def inject_fault(kind: str) -> None:
    """Fault injection for the failure-handling tests (see workers.FAULT_ENV)."""
    if kind == "crash":
        raise RuntimeError("injected crash (PDQN_FAULT)")
    if kind == "kill":
        os.kill(os.getpid(), 9)
    if kind == "hang":
        time.sleep(3600)


def with_fault(step: Callable, steps: Callable[[], int], fault: tuple[str, int] | None) -> Callable:
    """`step` as it is, or, where a test asked for a fault (worker_fault), `step` behind the fault's check:
    a run without one has no check on its path."""
    if fault is None:
        return step
    kind, at = fault

    def faulty(*args, **kwargs):
        if steps() >= at:
            inject_fault(kind)
        return step(*args, **kwargs)

    return faulty


class WorkerFailed(RunError):
    """A worker process died, raised, hung, or stopped receiving weights: one line, naming it."""


def worker_fault(index: int) -> tuple[str, int] | None:
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return None
    worker, kind, step = spec.split(":")
    return (kind, int(step)) if int(worker) == index else None


def run_worker(role: str, index: int, parent: int, specs: dict, errors, semaphores: tuple, body: Callable,
               args) -> None:
    """A worker process's target: map the run's shared blocks, call `body(index, arrays, waiter,
    args)` with the signal and error handling described above, and unmap them again (`args`: the
    design's dataclass of what its worker needs, named, never a positional tuple). `parent`: the
    main process's pid, whose death kills the worker. `semaphores` are the pool's notifiers'
    semaphores (one per worker, one for the main process): the Waiter blocks on its own and posts
    the main process's."""
    if not die_with_parent(parent):  # the main process died before the signal was armed
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    arrays, segments = attach(specs)
    status_row = arrays["status"][index]
    status_row["pid"] = os.getpid()
    control = Control(arrays["control"])
    waiter = Waiter(control, status_row, parent, index, Notifier(semaphores[0], arrays["status"]["waiting"]),
                    Notifier(semaphores[1], main_flag(control)))
    try:
        body(index, arrays, waiter, args)
        waiter.main_notifier.post(0)  # it set its state DONE: a main process waiting in finish() looks again
    except Stopped:
        pass
    except RunError as err:  # an expected fault, named in one line: the error itself, its traceback beside it
        status_row["state"] = FAILED
        if err.detail is None:
            err.detail = traceback.format_exc()
        errors.put((index, f"{role} {index} (pid {os.getpid()}): {err}", err))
        raise SystemExit(1)
    except BaseException as err:  # noqa: BLE001 - report everything, then exit non-zero
        status_row["state"] = FAILED
        said = " ".join(str(err).split())[:300]
        errors.put((index, f"{role} {index} (pid {os.getpid()}) raised {type(err).__name__}"
                    + (f": {said}" if said else ""), traceback.format_exc()))
        raise SystemExit(1)
    finally:
        del status_row
        arrays.clear()  # drop our views so the segments can be unmapped now
        for segment in segments:
            segment.close()


class WorkerPool:
    """Starts one spawn process per row of `status`, running `body(index, arrays, waiter, args)`,
    and supervises them; `blocks` are the run's shared arrays, `status` and `control` among them
    (`worker_pool` makes all three and always stops and frees them)."""

    def __init__(self, role: str, blocks: SharedBlocks, status: np.ndarray, control: Control, timeout_s: float):
        self.role, self.blocks, self.status, self.control, self.timeout_s = role, blocks, status, control, timeout_s
        reaper.install()  # the pool's semaphores are unlinked even after a group kill
        self.ctx = mp.get_context("spawn")
        self.errors = self.ctx.SimpleQueue()
        # Workers block on `workers_notifier` (the main process notifies it when they may go on), the
        # main process on `main_notifier` (workers notify it when they bring it work or reach a sync point).
        self.workers_notifier = Notifier([self.ctx.Semaphore(0) for _ in range(len(status))], status["waiting"])
        self.main_notifier = Notifier([self.ctx.Semaphore(0)], main_flag(control))
        self.procs: list[mp.process.BaseProcess] = []
        self._progress = np.zeros((len(status), 2), dtype=np.int64)
        self._progress_time = np.zeros(len(status))
        pipes = [self.ctx.Pipe(duplex=False) for _ in range(len(status))]
        self._state_readers = [reader for reader, _ in pipes]
        self.state_writers = [writer for _, writer in pipes]  # worker i sends its state on state_writers[i]

    def start(self, body: Callable, args_for: Callable[[int], object]) -> None:
        """Start worker i running `body(i, arrays, waiter, args_for(i))` (run_worker) over every
        block allocated so far."""
        for index in range(len(self.status)):
            semaphores = (self.workers_notifier.semaphores, self.main_notifier.semaphores)
            args = (self.role, index, os.getpid(), self.blocks.specs, self.errors, semaphores, body, args_for(index))
            proc = self.ctx.Process(target=run_worker, args=args, name=f"{self.role}-{index}", daemon=True)
            proc.start()
            self.procs.append(proc)
        for writer in self.state_writers:  # the children hold their own copies now
            writer.close()
        self._progress_time[:] = time.monotonic()

    def collect(self) -> list:
        """Every worker's state, as each stopped worker sends it (its next message on its pipe)."""
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

    def go(self, start_timeout_s: float) -> None:
        """The main process's half of the start handshake (notifier.Waiter.ready): wait until every
        worker is READY, then say GO and wake them."""
        self.wait_until(lambda: bool((self.status["state"] >= READY).all()), f"the {self.role}s to start",
                        start_timeout_s)
        self.control[Control.GO] = 1
        self.workers_notifier.notify()

    def finish(self, timeout_s: float = 30.0) -> np.ndarray:
        """Wait until every worker is DONE; returns a copy of their status rows (the blocks go next)."""
        self.wait_until(lambda: bool((self.status["state"] == DONE).all()), f"the {self.role}s to finish", timeout_s)
        return self.status.copy()

    def wait_until(self, condition: Callable[[], bool], what: str, timeout_s: float) -> None:
        """Block until condition() holds on the workers' states: each worker posts the main
        notifier as it says READY (Waiter.ready) and as it ends (run_worker), and every beat
        checks that none died or hung meanwhile."""
        self.main_notifier.wait_until(0, condition, self.check, timeout_s=timeout_s)
        if not condition():
            self.check()
            raise WorkerFailed(f"{self.role}s: timed out after {timeout_s:.0f} s waiting for {what}")

    def check(self, hung: bool = True) -> None:
        """Raise WorkerFailed naming the first worker that died, raised or (with `hung`) hung; a
        caller that times its workers' answers itself (vector_envs) names a hung one its own way."""
        now = time.monotonic()
        for index, proc in enumerate(self.procs):
            row = self.status[index]
            if proc.exitcode is not None and int(row["state"]) != DONE:
                message, error = self._death_message(index, proc)
                raise error if error is not None else WorkerFailed(message)
            if not hung:
                continue
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
        then stops with that error's one line, e.g. a non-finite env value, an env's exception or
        a divergence); another exception is a WorkerFailed of one line, its traceback the detail."""
        time.sleep(0.05)  # let a raising worker's traceback reach the queue
        reports = {}
        while not self.errors.empty():
            worker, text, error = self.errors.get()
            reports[worker] = text, error
        if index in reports and isinstance(reports[index][1], RunError):
            return reports[index]
        steps = int(self.status[index]["env_steps"])
        if index in reports:  # it raised something else: its one line, its traceback as the detail
            text, trace = reports[index]
            return "", WorkerFailed(f"{text} after {steps:,} env steps", detail=trace)
        code = proc.exitcode
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        return f"{self.role} {index} (pid {proc.pid}) {how} after {steps:,} env steps", None

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask every worker to stop, then terminate and kill whatever is left. Idempotent."""
        self.control[Control.STOP] = 1
        self.workers_notifier.notify()
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


@contextmanager
def worker_pool(role: str, workers: int, timeout_s: float) -> Iterator[WorkerPool]:
    """The scaffold every multi-process design runs in: shared blocks with the run's `control`
    flags and one `status` row per worker, a pool over them, and, however the run ends (a
    result, an exception, Ctrl-C), every worker stopped and every block freed
    (tests/test_resume.py::test_a_run_killed_whole_resumes_with_exact_counts_and_nothing_left_behind)."""
    blocks, pool = SharedBlocks(), None
    try:
        control = Control.allocate(blocks)
        status = blocks.allocate("status", (workers,), STATUS_DTYPE)
        pool = WorkerPool(role, blocks, status, control, timeout_s)
        yield pool
    finally:
        if pool is not None:
            pool.stop()
        blocks.close()


def yield_to_learner(niceness: int) -> None:
    """In a worker that feeds a learner: lower this process's priority by `niceness` (cfg.actor_nice)
    and, on Linux, mark it SCHED_BATCH, whose wake-ups do not preempt the running learner. The
    learner is the one process every worker's data waits on; with more workers than cores, equal
    shares made its update dearer (docs/design-notes.md#actor_nice). Priorities only order who runs
    when the cores are short; with a core each, nothing changes."""
    if niceness <= 0:
        return
    os.nice(niceness)
    if hasattr(os, "sched_setscheduler"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:  # a restricted container: the niceness alone
            pass


def warn_if_oversubscribed(num_workers: int, what: str) -> None:
    cores = limits.available_cores()  # read at call time: tests stand in a machine's core count
    if num_workers > cores:
        warnings.warn(f"num_workers={num_workers} {what} on {cores} CPU cores: they will time-share the "
                      f"cores, so throughput cannot scale past {cores}", RunWarning, stacklevel=3)


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
