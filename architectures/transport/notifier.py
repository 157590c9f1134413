"""Blocking without CPU: notifiers between the main process and its workers.

A process that waits (an actor for the rate limiter or room in its ring, the learner for data,
a stopped worker for its release) blocks on a semaphore of its own and uses no CPU; whoever
changes what it waits for notifies it. A waiting process never polls the CPU away from the process
it waits for (polling made waiting actors take the learner's core: docs/design-notes.md#notifier).
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from architectures.transport.shared import READY, RUNNING, Control


class Stopped(Exception):
    """Raised inside a worker when the main process asked it to stop, or disappeared."""


BEAT_S = 0.05
"""The longest a blocked process sleeps between its checks (heartbeat, STOP, a vanished parent,
a dead worker): far below worker_timeout_s and the 0.2 s health check."""


class Notifier:
    """Wake-ups for waiting processes, one semaphore per waiter: a waiter sets its flag (in shared
    memory), re-checks what it waits for and blocks on its own semaphore, using no CPU, until
    notify() posts it or BEAT_S passes; notify() posts (a non-blocking sem_post) only the waiters
    whose flag is set and clears the flag, so nobody waiting costs it one read of the flags.

    Polling in short sleeps made many waiting actors take the learner's core
    (docs/design-notes.md#notifier). A shared condition variable was tried first: its
    notify waits for every woken process to acknowledge, which stalled the learner on each
    update while the actors it woke were scheduled. A wake-up lost to a stale read costs the
    waiter at most BEAT_S, never a hang, since every wait re-checks its condition after each
    beat (tests/test_shared.py::test_a_notifier_wakes_a_blocked_waiter_without_polling). A post the
    waiter never took (its beat ended and it saw the condition before notify()'s post landed)
    costs its next wait one extra check, never a missed wake-up
    (tests/test_shared.py::test_notify_posts_only_flagged_waiters_and_clears_their_flags)."""

    ANY, RATE, ROOM = 1, 2, 3
    """What a waiter waits for (its flag's value): anything the notifying side changes (start,
    release, stop), the rate limiter, or room in its ring. A notify that knows which changed posts
    only those waiters: woken on every update to find the rate limiter still shut, actors took the
    learner's core in turns (docs/design-notes.md#notifier)."""

    def __init__(self, semaphores: list, flags: np.ndarray):
        self.semaphores, self.flags = semaphores, flags  # flags: (waiters,) int64, shared

    def waiting(self, reason: int) -> bool:
        return bool((self.flags == reason).any())

    def notify(self, reason: int | None = None) -> None:
        """Post every flagged waiter (a start, a release, a stop), or those waiting for `reason`."""
        # A comparison first: it snapshots the flags, which waiters set while we read them
        # (np.flatnonzero on the live array raised "number of non-zero array elements changed").
        for index in np.flatnonzero(self.flags != 0 if reason is None else self.flags == reason):
            self.flags[index] = 0
            self.semaphores[index].release()

    def post(self, index: int) -> None:
        """Post waiter `index` alone, if it waits (its flag is up): one read when it does not. An
        env process notifies the main process so after each answer (transport/vector_envs.py)."""
        if self.flags[index]:
            self.flags[index] = 0
            self.semaphores[index].release()

    def wait_until(self, index: int, condition: Callable[[], bool], beat: Callable[[], None] = lambda: None,
                   timeout_s: float | None = None, reason: int = ANY) -> float:
        """Block waiter `index` until condition() holds (or `timeout_s` passes), calling beat()
        every BEAT_S; returns the seconds waited."""
        if condition():
            return 0.0
        began = time.perf_counter()
        semaphore = self.semaphores[index]
        while True:
            beat()
            self.flags[index] = reason
            if condition():  # checked after the flag is up: a notify() from now on posts the semaphore
                self.flags[index] = 0
                break
            left = None if timeout_s is None else timeout_s - (time.perf_counter() - began)
            if left is not None and left <= 0:
                self.flags[index] = 0
                break
            semaphore.acquire(timeout=BEAT_S if left is None else min(BEAT_S, left))
            self.flags[index] = 0
            if condition():
                break
        return time.perf_counter() - began


def main_flag(control: Control) -> np.ndarray:
    """The main process's notifier flag: a (1,) view of its Control slot."""
    return control.array[Control.MAIN_WAITING:Control.MAIN_WAITING + 1, 0]


class Waiter:
    """A worker's polite wait: blocks on the workers' notifier (notified by the main process when a
    condition a worker may wait for changes), beats its heartbeat, and gives up when the main
    process sets STOP or is gone."""

    def __init__(self, control: Control, status_row, parent_pid: int, index: int, notifier: Notifier,
                 main_notifier: Notifier):
        self.control, self.status_row, self.parent_pid, self.notifier = control, status_row, parent_pid, notifier
        self.index = index
        self.main_notifier = main_notifier  # notified when this worker brings the main process work or stops

    def check(self) -> None:
        if self.control[Control.STOP] or os.getppid() != self.parent_pid:
            raise Stopped

    def _beat(self) -> None:
        self.status_row["heartbeat"] += 1
        self.check()

    def until(self, condition: Callable[[], bool], reason: int = Notifier.ANY) -> float:
        """Block until condition() holds; returns the seconds spent waiting."""
        return self.notifier.wait_until(self.index, condition, self._beat, reason=reason)

    def take(self, semaphore) -> float:
        """Block until `semaphore` is posted and take the post, beating every BEAT_S: a counted
        hand-off (one post, one take; vector_envs' commands), where `until` waits on a condition.
        Returns the seconds waited."""
        if semaphore.acquire(False):
            return 0.0
        began = time.perf_counter()
        while not semaphore.acquire(timeout=BEAT_S):
            self._beat()
        return time.perf_counter() - began

    def ready(self) -> None:
        """The worker's half of the start handshake: say READY, block until the main process says
        GO (WorkerPool.go), then run. Everything a worker sets up before this (its env, its
        network, a first copy of the weights) is start-up time, never the run's clock."""
        self.status_row["state"] = READY
        self.main_notifier.post(0)  # a main process waiting for every READY (WorkerPool.go) looks again
        self.until(lambda: self.control[Control.GO] == 1)
        self.status_row["state"] = RUNNING
