import faulthandler
import os
import sys

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


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` are skipped where there is no CUDA device, with the reason said."""
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
