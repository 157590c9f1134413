"""How architectures/ reads, checked on its AST: no function longer than a reader takes in at once, no
nested function reading a name its enclosing function binds only after it (a closure that works only
because of the order the enclosing function happens to run in), and no wait that polls."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FUNCTION_LINES = 80


def _trees(package: str = "architectures"):
    """(path relative to the checkout, parsed module) of every module in `package`."""
    for folder, _, files in os.walk(os.path.join(ROOT, package)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path) as f:
                    yield os.path.relpath(path, ROOT), ast.parse(f.read(), path)


def _functions(package: str = "architectures"):
    for path, tree in _trees(package):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def late_closures(function: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every nested function or lambda in `function` that reads a name `function`
    first binds on a later line (outside the nested function itself)."""
    first: dict[str, int] = {}
    for sub in ast.walk(function):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            first[sub.id] = min(first.get(sub.id, sub.lineno), sub.lineno)
    found = []
    for child in ast.walk(function):
        if child is function or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        args = child.args
        own = {a.arg for a in args.args + args.kwonlyargs + args.posonlyargs}
        own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        for node in ast.walk(child):
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in own
                    and node.id in first and first[node.id] > child.end_lineno):
                found.append((child.lineno, node.id))
    return found


def test_no_function_in_architectures_is_over_80_lines():
    long = [f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path, node in _functions() if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, long


def test_no_closure_in_architectures_reads_a_name_bound_after_it():
    late = [f"{path}:{line} reads {name}, bound later in {node.name}"
            for path, node in _functions() for line, name in late_closures(node)]
    assert not late, late


def test_the_closure_check_finds_a_late_binding_and_passes_an_early_one():
    late = ast.parse("def f():\n    g = lambda: later + 1\n    later = 2\n    return g\n").body[0]
    early = ast.parse("def f():\n    early = 2\n    g = lambda: early + 1\n    return g\n").body[0]
    assert late_closures(late) == [(2, "later")] and late_closures(early) == []


def sleeping_loops(tree: ast.AST) -> list[int]:
    """Lines of every `while` loop whose body calls a `sleep`: a wait that polls (look, sleep, look
    again) where it should block on what it waits for (a semaphore, a pipe, a notifier)."""
    return [loop.lineno for loop in ast.walk(tree) if isinstance(loop, ast.While)
            for node in ast.walk(loop) if isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "sleep"]


def test_no_wait_in_architectures_polls():
    """A waiting process blocks; it never polls (the WorkerPool's start and finish waits slept 10 ms
    between looks until they blocked on the main process's notifier)."""
    polls = [f"{path}:{line}" for path, tree in _trees() for line in sleeping_loops(tree)]
    assert not polls, polls


def test_the_polling_check_finds_a_sleep_in_a_loop_and_passes_a_blocking_wait():
    polling = ast.parse("import time\nwhile not done():\n    time.sleep(0.01)\n")
    blocking = ast.parse("while not done():\n    semaphore.acquire(timeout=0.05)\n")
    assert sleeping_loops(polling) == [2] and sleeping_loops(blocking) == []
