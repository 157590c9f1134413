"""The README and docs/ say what the code does: the generated pages match the code, every command
they show runs in a form that does no work (so a renamed flag, key or sweep fails here), the README
stays short, carries the answer the report generates, and links only to pages that exist."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from experiments import docs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
README_LIMIT = 12_000
NOT_RUN = {"./setup.sh": "installs (CI runs it)", "EXTRAS=bench": "installs (CI runs it)", "export": "sets the shell",
           ".venv/bin/ray": "starts a Ray cluster", "scp": "copies a file from another host",
           ".venv/bin/tensorboard": "serves until stopped (tests/test_event_files.py serves one and reads its page)",
           "make": "rebuilds the paper (tests/test_paper_pdf.py)",
           "git": "makes the worktrees a before/after comparison runs in (tests/test_before_after.py)"}
"""Command lines the docs show that this test does not run, and why."""
SACRED = ("experiments.train", "experiments.components", "experiments.timing")
DRY_RUN = ("experiments.sweep", "experiments.plan", "experiments.on_device", "architectures", "analysis.report",
           "experiments.benches.parallel", "experiments.benches.sb3", "experiments.benches.vector_trip", "experiments.plan.predict",
           "experiments.benches.event_files", "experiments.benches.speed_before_after", "analysis.before_after",
           "experiments.plan.validation", "analysis.plan_validation")


def _commands() -> list[tuple[str, str]]:
    """(page, command line) for every line of every bash block of the README and docs/."""
    found = []
    for path in PAGES:
        text = open(path).read()
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith("#"):
                    found.append((os.path.relpath(path, ROOT), line))
    return found


def _no_work(line: str) -> list[str] | None:
    """The command in a form that does no work, or None for a line NOT_RUN names."""
    for command in line.split("&&"):
        words = shlex.split(command)
        if words[0] in NOT_RUN:
            continue
        assert words[:2] == [".venv/bin/python", "-m"], f"a command this test cannot check: {line}"
        module, rest = words[2], words[3:]
        at = rest.index("with") if "with" in rest else len(rest)
        if module in SACRED:
            command = [] if "print_config" in rest else ["print_config"]
            return [sys.executable, "-m", module, *rest[:at], *command, *rest[at:]]
        if module == "pytest":  # the test command itself: it collects, runs nothing
            return [sys.executable, "-m", module, *rest, "--collect-only", "-q"]
        assert module in DRY_RUN, f"no form that does no work is known for {module}: {line}"
        if module == "experiments.sweep":
            return [sys.executable, "-m", module, rest[0], "--dry-run", *rest[1:]]
        return [sys.executable, "-m", module, *rest[:at], "--dry-run", *rest[at:]]
    return None


def test_the_generated_pages_match_the_code():
    assert docs.main(["--check"]) == 0


def test_every_command_the_docs_show_runs_without_doing_work(tmp_path):
    readme = open(os.path.join(ROOT, "README.md")).read()
    example = re.search(r"<!-- example-env:.*?```python\n(.*?)```", readme, flags=re.S).group(1)
    (tmp_path / "my_envs.py").write_text(example)  # the README's env, where its commands expect it
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    mongo = os.environ.get("MONGO_URL")  # a line naming a MongoDB store runs against the real server, where one is set
    checks = [(page, line, [mongo if w.startswith("mongodb://") else w for w in cmd])
              for page, line in _commands() if (cmd := _no_work(line)) is not None
              and (mongo or "mongodb://" not in line)]
    assert len(checks) >= 20

    # each command from its own __main__ in a fork of one interpreter that imported torch and the rest
    # once (tests/forked_commands.py): the commands' imports were 80% of this test's time
    request = [{"argv": cmd[2:], "env": env, "cwd": ROOT} for _, _, cmd in checks]
    assert all(cmd[:2] == [sys.executable, "-m"] for _, _, cmd in checks)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "forked_commands.py")], cwd=ROOT, env=env,
                          input=json.dumps(request), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    failed = [(page, line, r["returncode"], "timed out" if r["timed_out"] else r["tail"].strip().splitlines()[-1:])
              for (page, line, _), r in zip(checks, results) if r["returncode"] != 0]
    assert len(results) == len(checks) and failed == []


def test_the_readme_is_short_links_pages_that_exist_and_gives_the_answer():
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert len(readme) <= README_LIMIT
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert links and [link for link in links if not os.path.exists(os.path.join(ROOT, link))] == []
    answer = re.search(r"<!-- answer:[^\n]*-->\n(.*)<!-- end of the answer -->", readme, flags=re.S).group(1)
    assert answer.strip() == open(os.path.join(ROOT, "paper", "tables", "answer.md")).read().strip()


@pytest.mark.parametrize("line,expected", [
    (".venv/bin/python -m experiments.sweep smoke --report", ["smoke", "--dry-run", "--report"]),
    (".venv/bin/python -m experiments.train with cartpole seed=3", ["print_config", "with", "cartpole", "seed=3"]),
    (".venv/bin/python -m experiments.plan --out x with cartpole", ["--out", "x", "--dry-run", "with", "cartpole"]),
    ("./setup.sh && .venv/bin/python -m experiments.sweep smoke", ["smoke", "--dry-run"]),
])
def test_each_command_gets_its_no_work_form(line, expected):
    assert _no_work(line)[3:] == expected


def test_a_forked_command_keeps_its_own_exit_status_output_and_environment(tmp_path):
    """The fork runner test_every_command... relies on: a refusal, a traceback and a success each come
    back as that command's own status and last lines, in the order asked, with its own environment."""
    (tmp_path / "probe.py").write_text("import os, sys\nprint(os.environ['PROBE'], sys.argv[1:])\n"
                                       "sys.exit(int(sys.argv[1]))\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    request = [{"argv": ["probe", "3"], "env": {**env, "PROBE": "first"}, "cwd": ROOT},
               {"argv": ["experiments.sweep", "no_such_sweep", "--dry-run"], "env": env, "cwd": ROOT},
               {"argv": ["probe", "0"], "env": {**env, "PROBE": "third"}, "cwd": str(tmp_path)},
               {"argv": ["probe"], "env": {**env, "PROBE": "fourth"}, "cwd": ROOT}]
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "forked_commands.py")], env=env,
                          input=json.dumps(request), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, sweep, third, fourth = json.loads(proc.stdout)
    assert first == {"returncode": 3, "tail": "first ['3']\n", "timed_out": False}
    assert sweep["returncode"] == 2 and "no_such_sweep" in sweep["tail"]
    assert third == {"returncode": 0, "tail": "third ['0']\n", "timed_out": False}
    assert fourth["returncode"] == 1 and "IndexError" in fourth["tail"]


def test_a_forked_server_gives_each_command_its_own_streams_status_and_time_limit(tmp_path, forked):
    """The `forked` fixture the refusal tests use: stdout and stderr apart, the exit status, an
    exception's traceback, and a command past its time limit ended whole (TimeoutExpired)."""
    (tmp_path / "probe2.py").write_text("import os, sys, time\nprint('out', os.getcwd())\n"
                                        "print('err', os.environ['PROBE'], file=sys.stderr)\n"
                                        "time.sleep(float(sys.argv[2])); sys.exit(int(sys.argv[1]))\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PROBE": "x"}
    done = forked.run(["probe2", "4", "0"], env=env, cwd=str(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (4, f"out {tmp_path}\n", "err x\n")
    assert done.args[-3:] == ["probe2", "4", "0"]
    with pytest.raises(subprocess.TimeoutExpired):
        forked.run(["probe2", "0", "60"], env=env, timeout=1)
    broken = forked.run(["probe2"], env=env)  # no argv[1]: the command's own traceback, status 1
    assert broken.returncode == 1 and "IndexError" in broken.stderr and broken.stdout.startswith("out ")
    # the search path `python -m` builds (the working folder, PYTHONPATH), not the server's: tests/ is not on it
    unseen = forked.run(["forked_commands"], env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                        cwd=str(tmp_path))
    assert unseen.returncode == 1 and "No module named forked_commands" in unseen.stderr, unseen.stderr
