"""Run `python -m MODULE ARGS` command lines, each in a fork of one interpreter that has already
imported the heavy third-party libraries.

Why: a command line run as its own interpreter spends ~1.5 s of a core importing torch, pandas, sacred
and the rest before it refuses or prints its plan; the quick suite runs ~100 such command lines
(tests/test_docs.py ~50, the one-line refusals of the front doors most of the rest). A fork starts
with those imports done and nothing else of the project's, so each command still runs from its own
`__main__` with its own argv, environment, working folder, stdout, stderr and exit status; what it
leaves out is only the libraries' import (and what they print while importing), which the tests that
start real processes keep checking. Only for commands that stop before any work: a run's own
processes, process group and signals are a real subprocess's business.

Two ways to use it:
- `python tests/forked_commands.py < checks.json > results.json`: a batch, two at a time; the input
  is a list of {"argv": [module, *args], "env": {...}, "cwd": path}, the output a list of
  {"returncode", "tail"} (stdout and stderr together) in the same order;
- `Forker()` (the `forked` fixture, tests/conftest.py): one server per test process, `run(argv, env,
  cwd)` returns a CompletedProcess as `subprocess.run(..., capture_output=True, text=True)` does.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback

PRELOAD = ("numpy", "torch", "pandas", "scipy.stats", "gymnasium", "sacred", "matplotlib", "seaborn", "tyro")
"""Imported once, before the first fork; a library missing here is simply left to the command."""
AT_ONCE = 2
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _child(argv: list[str], env: dict, cwd: str, out: str, err: str) -> None:
    """In the fork: the command's own stdio, env, cwd and argv, then its module as __main__."""
    atexit._clear()  # the parent's exit handlers (its temporary folder's finalizer) are not the command's
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setpgid(0, 0)  # its own group, as a subprocess started with start_new_session: a timeout ends it whole
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd if err == out else os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:0] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.argv = list(argv)
    code = 0
    try:
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if isinstance(stop.code, int) or stop.code is None:
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - the command's own traceback, as its interpreter would print it
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _fork(argv: list[str], env: dict, cwd: str, out: str, err: str) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _child(argv, env, cwd, out, err)
        finally:  # never back into the parent's loop, whatever failed before the command ran
            traceback.print_exc()
            os._exit(70)
    return pid


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


def run_all(checks: list[dict]) -> list[dict]:
    _preload()
    results: list[dict | None] = [None] * len(checks)
    running: dict[int, tuple[int, str]] = {}
    tmp = tempfile.mkdtemp(prefix="forked-commands-")
    try:
        pending = list(enumerate(checks))
        while pending or running:
            while pending and len(running) < AT_ONCE:
                index, check = pending.pop(0)
                out = os.path.join(tmp, f"{index}.out")
                running[_fork(check["argv"], check["env"], check["cwd"], out, out)] = (index, out)
            pid, status = os.wait()  # blocks until one command ends
            index, out = running.pop(pid)
            results[index] = {"returncode": os.waitstatus_to_exitcode(status), "tail": _read(out)[-3000:]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def serve() -> None:
    """One request per line on stdin ({"argv", "env", "cwd", "timeout"}), one answer per line on stdout
    ({"returncode", "stdout", "stderr"}), one command at a time, until stdin closes."""
    answers = os.fdopen(os.dup(1), "w")
    null, stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
    os.dup2(null, 1)  # what the libraries print cannot break the answers
    os.dup2(null, 2)  # nor fill the test's log with their import warnings
    _preload()
    os.dup2(stderr, 2)
    tmp = tempfile.mkdtemp(prefix="forked-commands-")
    try:
        for n, line in enumerate(sys.stdin):
            asked = json.loads(line)
            out, err = os.path.join(tmp, f"{n}.out"), os.path.join(tmp, f"{n}.err")
            pid = _fork(asked["argv"], asked["env"], asked["cwd"], out, err)
            ended: list[int] = []
            waiter = threading.Thread(target=lambda: ended.append(os.waitpid(pid, 0)[1]), daemon=True)
            waiter.start()
            waiter.join(asked["timeout"])  # blocks until the command ends or its time is up
            timed_out = waiter.is_alive()
            if timed_out:
                os.killpg(pid, signal.SIGKILL)
                waiter.join()
            answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(ended[0]), "stdout": _read(out),
                                      "stderr": _read(err), "timed_out": timed_out}) + "\n")
            answers.flush()
            for path in (out, err):
                os.remove(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Forker:
    """A client of `serve()` in a process of its own, started on the first command."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def run(self, argv: list[str], env: dict | None = None, cwd: str = ROOT,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """`python -m argv[0] argv[1:]` in a fork, as subprocess.run(..., capture_output=True, text=True)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], cwd=ROOT,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.proc.stdin.write(json.dumps({"argv": list(argv), "env": dict(os.environ if env is None else env),
                                          "cwd": str(cwd), "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        cmd = [sys.executable, "-m", *argv]
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(cmd, timeout, answer["stdout"], answer["stderr"])
        return subprocess.CompletedProcess(cmd, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # the server's loop ends
            self.proc.wait(timeout=60)
            self.proc.stdout.close()
            self.proc = None


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        json.dump(run_all(json.load(sys.stdin)), sys.stdout)
