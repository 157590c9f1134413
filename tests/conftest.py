import faulthandler
import fcntl
import json
import os
import shutil
import sys
import tempfile

import pytest

# Tests import the repo's packages from the checkout, installed or not.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from architectures.core.config import DQNConfig  # noqa: E402


@pytest.fixture
def tiny_cfg() -> DQNConfig:
    """A CartPole run small enough for a unit test (about a second)."""
    return DQNConfig(env_id="CartPole-v1", seed=7, total_env_steps=1_200, hidden_sizes=(16, 16), buffer_size=1_000,
                     batch_size=16, learning_starts=200, eps_decay_steps=500, eval_every=400, eval_episodes=2,
                     target_update_period=20, log_every=200)


KINDS = "PDQN_TEST_KINDS"
"""The folder where each xdist worker writes the kind of every test it collected, for the scheduler."""
WEIGHT = {"quick": 1, "slow": 10}


MADE = pytest.StashKey[str]()


def pytest_configure(config):
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        config.stash[MADE] = os.environ[KINDS] = tempfile.mkdtemp(prefix="pdqn-test-kinds-")  # workers inherit it


def pytest_unconfigure(config):
    made = config.stash.get(MADE, None)  # only the folder this run made (a pytest a test starts makes its own)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        if os.environ.get(KINDS) == made:
            del os.environ[KINDS]


def _write_kinds(config, items) -> None:
    """On an xdist worker: {nodeid: alone | slow | quick} for the controller's scheduler."""
    folder = os.environ.get(KINDS)
    if not hasattr(config, "workerinput") or not folder or not os.path.isdir(folder):
        return
    kinds = {item.nodeid: "alone" if item.get_closest_marker("alone") else
             "slow" if item.get_closest_marker("slow") else "quick" for item in items}
    path = os.path.join(folder, f"{config.workerinput['workerid']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(kinds, f)
    os.replace(path + ".tmp", path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Files two at a time, the heaviest first, and every `alone` test in one last unit: an alone test
    waits for the test beside it to end, so spread through the run each one left a worker idle for as
    long as a long test beside it still had to run (193 s of such waits in one run of the suite)."""
    if config.getvalue("dist") != "loadfile" or not os.environ.get(KINDS):
        return None
    from xdist.scheduler import LoadFileScheduling

    class AloneLast(LoadFileScheduling):
        def _kinds(self) -> dict:
            if not hasattr(self, "kinds"):
                self.kinds = {}
                for name in sorted(os.listdir(os.environ[KINDS])):
                    if name.endswith(".json"):
                        with open(os.path.join(os.environ[KINDS], name)) as f:
                            self.kinds.update(json.load(f))
            return self.kinds

        def _split_scope(self, nodeid: str) -> str:
            return "alone" if self._kinds().get(nodeid) == "alone" else super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            def weight(scope):
                if scope == "alone":
                    return -1  # last, once nothing else is left to hand out
                return sum(WEIGHT[self._kinds().get(nodeid, "quick")] for nodeid in self.workqueue[scope])
            for scope in sorted(self.workqueue, key=weight, reverse=True):
                self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return AloneLast(config, log)


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` are skipped where there is no CUDA device, with the reason said."""
    _write_kinds(config, items)
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA: torch.cuda.is_available() is false on this machine; the meta-device "
                                   "tests in tests/test_device.py cover its host reads and device mismatches here")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


HANG_S = 420
"""Past pytest-timeout's 300 s: a test whose timeout exception was swallowed, or whose clean-up
blocks again after it, would hold the suite until CI's own limit (one CI run hung 90 min in
test_faults with no trace). faulthandler's watchdog is a C thread: it prints every thread's stack
and exits even when the main thread is stuck where no signal handler runs."""


@pytest.fixture(autouse=True)
def _hang_backstop():
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _the_machine(request, tmp_path_factory):
    """Tests run two at a time (pytest-xdist, `-n 2` in pyproject's addopts): most of a process-heavy
    test's time is spent waiting, so two share 2 cores well. A test marked `alone` measures a
    timing or reads machine-wide state, so it holds the machine: it waits for the test beside it to
    end, and no other test starts until it has ended. A readers-writer lock over two flock files in
    the session's shared temp folder, the writer first in line (the turnstile); every wait blocks."""
    if not hasattr(request.config, "workerinput"):  # not under xdist (-n 0, -p no:xdist): alone already
        yield
        return
    alone = request.node.get_closest_marker("alone") is not None
    folder = tmp_path_factory.getbasetemp().parent  # each worker's base folder sits in the session's one
    with open(folder / "turnstile.lock", "a") as turnstile, open(folder / "machine.lock", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)  # behind an `alone` test that waits for the machine
        fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def forked():
    """Command lines that stop before any work, each in a fork of one interpreter that imported torch
    and the rest once (tests/forked_commands.py): `forked.run(argv, env, cwd)` as subprocess.run."""
    from tests.forked_commands import Forker

    forker = Forker()
    yield forker
    forker.close()
