"""The run's reaper: unlinks its shared memory and semaphores after ANY death of the main process.

Python's multiprocessing resource tracker unlinks what a killed main process leaves in /dev/shm,
but it is a child in the same process group: `kill -9 -- -PGID` (a job killed whole, a session
that ends) kills it too, and every segment and named semaphore of the run stays in /dev/shm
(what one run left: docs/design-notes.md#reaper). So the main process starts this reaper in a
session of its own, which a group kill does not reach, and copies every resource-tracker
registration to it: a segment or semaphore created in the main process (ours, torch's,
gymnasium's) is registered, one unlinked by its owner is forgotten. When the main process dies,
however it dies, the reaper's stdin reaches EOF; it unlinks whatever is still registered and
exits. A clean run leaves it nothing.

`install()` is idempotent and cheap until the first registration: single_env never starts one.
tests/test_resume.py kills each design's whole process group and finds /dev/shm clean.
"""

from __future__ import annotations

import subprocess
import sys
import threading

_lock = threading.RLock()
_proc: subprocess.Popen | None = None
_installed = False
_pending: list[str] = []
_sending = False


def _send(line: str) -> None:
    """Pass one registration line to the reaper. Re-entrant: the garbage collector can run a finalizer
    (a semaphore's unregistration) in the middle of a send, in this very thread; that call queues its
    line and returns, and the send under way writes it next. (A plain lock here deadlocked the run that
    allocated shared memory while an earlier run's locks were collected.)"""
    global _proc, _sending
    with _lock:
        _pending.append(line)
        if _sending:
            return
        _sending = True
        try:
            while _pending:
                if _proc is None or _proc.poll() is not None:
                    _proc = subprocess.Popen([sys.executable, "-m", "architectures.transport.reaper"],
                                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                                             text=True, bufsize=1)
                batch = "".join(f"{queued}\n" for queued in _pending)
                _pending.clear()
                try:
                    _proc.stdin.write(batch)
                except (BrokenPipeError, OSError):  # the reaper is gone (killed by hand): nothing more we can do
                    pass
        finally:
            _sending = False


def install() -> None:
    """Copy this process's resource-tracker registrations to the reaper from now on."""
    global _installed
    if _installed:
        return
    from multiprocessing import resource_tracker

    register, unregister = resource_tracker.register, resource_tracker.unregister

    def tracked_register(name: str, rtype: str) -> None:
        register(name, rtype)
        if rtype in ("shared_memory", "semaphore"):
            _send(f"+ {rtype} {name}")

    def tracked_unregister(name: str, rtype: str) -> None:
        unregister(name, rtype)
        if rtype in ("shared_memory", "semaphore"):
            _send(f"- {rtype} {name}")

    resource_tracker.register, resource_tracker.unregister = tracked_register, tracked_unregister
    _installed = True


def _unlink(rtype: str, name: str) -> None:
    try:
        if rtype == "shared_memory":
            import _posixshmem

            _posixshmem.shm_unlink(name)
        else:
            import _multiprocessing

            _multiprocessing.sem_unlink(name)
    except OSError:  # already gone
        pass


def main() -> None:
    """The reaper process: remember registrations from stdin; at EOF unlink what is left."""
    held: set[tuple[str, str]] = set()
    for line in sys.stdin:
        op, rtype, name = line.rstrip("\n").split(" ", 2)
        (held.add if op == "+" else held.discard)((rtype, name))
    for rtype, name in held:
        _unlink(rtype, name)


if __name__ == "__main__":
    main()
