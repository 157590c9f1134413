"""Run many `python -m MODULE ARGS` command lines, each in a fork of one interpreter that has already
imported the heavy third-party libraries, two at a time.

Why: tests/test_docs.py checks ~50 command lines the docs show, each of which, as its own interpreter,
spends ~1.5 s of a core importing torch, pandas, sacred and the rest before it refuses or prints its
plan. A fork starts with those imports done and nothing else of the project's, so each command still
runs from its own `__main__` with its own argv, environment and exit status; what it leaves out is only
the libraries' import, which every other test of the suite makes.

Run as `python tests/forked_commands.py < checks.json > results.json`: the input is a list of
{"argv": [module, *args], "env": {...}, "cwd": path}, the output a list of {"returncode", "tail"}
in the same order.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import shutil
import sys
import tempfile
import traceback

PRELOAD = ("numpy", "torch", "pandas", "scipy.stats", "gymnasium", "sacred", "matplotlib", "seaborn", "tyro")
"""Imported once, before the first fork; a library missing here is simply left to the command."""
AT_ONCE = 2


def _child(argv: list[str], env: dict, cwd: str, out: str) -> None:
    """In the fork: the command's own stdio, env, cwd and argv, then its module as __main__."""
    atexit._clear()  # the parent's exit handlers (its temporary folder's finalizer) are not the command's
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
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


def run_all(checks: list[dict]) -> list[dict]:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    results: list[dict | None] = [None] * len(checks)
    running: dict[int, tuple[int, str]] = {}
    tmp = tempfile.mkdtemp(prefix="forked-commands-")
    try:
        pending = list(enumerate(checks))

        def reap() -> None:
            pid, status = os.wait()  # blocks until one command ends
            index, out = running.pop(pid)
            with open(out, errors="replace") as f:
                text = f.read()
            results[index] = {"returncode": os.waitstatus_to_exitcode(status), "tail": text[-3000:]}

        while pending or running:
            while pending and len(running) < AT_ONCE:
                index, check = pending.pop(0)
                out = os.path.join(tmp, f"{index}.out")
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    try:
                        _child(check["argv"], check["env"], check["cwd"], out)
                    finally:  # never back into the parent's loop, whatever failed before the command ran
                        traceback.print_exc()
                        os._exit(70)
                running[pid] = (index, out)
            reap()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


if __name__ == "__main__":
    json.dump(run_all(json.load(sys.stdin)), sys.stdout)
