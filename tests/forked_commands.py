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
  {"returncode", "tail", "timed_out"} (the tail: stdout and stderr together) in the same order, each
  command ended whole past 300 s;
- `Forker()` (the `forked` fixture, tests/conftest.py): one server per test process, `run(argv, env,
  cwd)` returns a CompletedProcess as `subprocess.run(..., capture_output=True, text=True)` does.
"""

from __future__ import annotations

import atexit
import ctypes
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
PR_SET_PDEATHSIG = 1


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _child(argv: list[str], env: dict, cwd: str, out: str, err: str) -> None:
    """In the fork: the command's own stdio, env, cwd, search path and argv, then its module as __main__,
    then its exit as an interpreter's: non-daemon threads joined, exit handlers run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # never outlives the runner, whatever ends it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setpgid(0, 0)  # its own group, as a subprocess started with start_new_session: a timeout ends it whole
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd if err == out else os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
    own = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # the runner's, not the command's
    asked = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    # as `python -m` builds it: the working folder, PYTHONPATH, then the interpreter's own (not tests/)
    sys.path[:] = [os.path.abspath(cwd), *asked, *(p for p in sys.path[1:] if p not in own)]
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
        threading._shutdown()  # what the interpreter does at exit: wait for the command's non-daemon threads
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


def run_all(checks: list[dict], timeout: float = 300) -> list[dict]:
    """Each check as a fork, AT_ONCE at a time, each ended whole after `timeout` s (said as timed_out)."""
    _quiet_preload()
    results: list[dict | None] = [None] * len(checks)
    running: dict[int, tuple[int, str, threading.Timer, list]] = {}
    tmp = tempfile.mkdtemp(prefix="forked-commands-")
    try:
        pending = list(enumerate(checks))
        while pending or running:
            while pending and len(running) < AT_ONCE:
                index, check = pending.pop(0)
                out = os.path.join(tmp, f"{index}.out")
                pid = _fork(check["argv"], check["env"], check["cwd"], out, out)
                fired: list[bool] = []
                timer = threading.Timer(timeout, lambda pid=pid, fired=fired: fired.append(_kill_group(pid)))
                timer.start()
                running[pid] = (index, out, timer, fired)
            pid, status = os.wait()  # blocks until one command ends
            index, out, timer, fired = running.pop(pid)
            timer.cancel()
            results[index] = {"returncode": os.waitstatus_to_exitcode(status), "tail": _read(out)[-3000:],
                              "timed_out": bool(fired)}
    finally:
        for _, _, timer, _ in running.values():
            timer.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def _kill_group(pid: int) -> bool:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended just now
        pass
    return True


def _quiet_preload() -> None:
    """The libraries imported with stdout and stderr sent nowhere: what they print while importing can
    neither break the runner's answers nor fill a test's log; stderr is given back after."""
    null, stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
    os.dup2(null, 1)
    os.dup2(null, 2)
    _preload()
    os.dup2(stderr, 2)


def serve() -> None:
    """One request per line on stdin ({"argv", "env", "cwd", "timeout"}), one answer per line on stdout
    ({"returncode", "stdout", "stderr"}), one command at a time, until stdin closes."""
    answers = os.fdopen(os.dup(1), "w")
    _quiet_preload()
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
                _kill_group(pid)
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
        try:
            self.proc.stdin.write(json.dumps({"argv": list(argv), "env": dict(os.environ if env is None else env),
                                              "cwd": str(cwd), "timeout": timeout}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the forked-commands server ended (exit {self.proc.wait()}) before answering")
        except BaseException:  # a timeout or Ctrl-C mid-exchange: its late answer must not reach the next test
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise
        answer = json.loads(line)
        cmd = [sys.executable, "-m", *argv]
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(cmd, timeout, answer["stdout"], answer["stderr"])
        return subprocess.CompletedProcess(cmd, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # the server's loop ends
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        answers = os.fdopen(os.dup(1), "w")  # run_all sends fd 1 nowhere while the libraries import
        json.dump(run_all(json.load(sys.stdin)), answers)
        answers.flush()
