"""The Python API (architectures/api.py): every design trains on a user's `module:EnvId` env, hands
back its trained network, acts with it, saves it and loads it to the same actions; bad input
raises the CLI's one-line ConfigError before any process starts; the README's example runs."""

import os
import subprocess
import sys

import numpy as np
import psutil
import pytest
import torch

import architectures
from architectures import ConfigError, DQNConfig, Result, load, train
from architectures.core.metrics import NullReporter
from architectures.core.networks import QNetwork, build_q_network
from architectures.registry import NAMES
from architectures.run.base import Run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_block(marker: str) -> str:
    """The README's python block after `<!-- marker`, as the README prints it."""
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read().split(f"<!-- {marker}", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


TINY = dict(env_id="my_envs:Corridor-v0", total_env_steps=1_500, eval_every=1_500, eval_episodes=2,
            learning_starts=200, hidden_sizes=(16,), buffer_size=1_500, batch_size=16, log_every=500, num_workers=2,
            worker_timeout_s=30.0, rollout_steps=16)
OBSERVATIONS = [np.array([x / 10], np.float32) for x in range(11)]  # every position in the corridor


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory):
    """The README's example env as `my_envs.py`, in a folder on sys.path (spawned workers get it)
    and on PYTHONPATH (the Ray instance a ray run starts, and its actors, get that)."""
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "my_envs.py").write_text(_readme_block("example-env:"))
    sys.path.insert(0, str(folder))
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), before) if p)
    yield folder
    sys.path.remove(str(folder))
    if before is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = before


@pytest.mark.parametrize("design, backend", [(name, "local") for name in NAMES] + [
    pytest.param("actor_learner", "ray", marks=pytest.mark.slow)])  # a Ray cluster's start (8 s): the full suite's
def test_every_design_trains_acts_saves_and_loads_to_the_same_actions(env_dir, tmp_path, design, backend):
    if backend == "ray":
        pytest.importorskip("ray", reason="ray is not installed (optional extra): pip install -e '.[ray]'")
    extra = {"utd": 1.0} if design == "high_utd" else {}
    agent = train(design, backend=backend, **TINY, **extra)
    assert isinstance(agent, Result) and agent.design == design and agent.config.backend == backend
    assert agent.result["env_steps"] == 1_500 and agent.result["updates"] > 0
    assert [c["env_steps"] for c in agent.result["holdout_curve"]] == [1_500]
    net = agent.q_network
    assert isinstance(net, QNetwork) and all(p.device.type == "cpu" and not p.is_shared() for p in net.parameters())
    untrained = build_q_network((1,), 2, (16,), agent.config.layer_norm, agent.config.seed)
    assert any(not torch.equal(a, b) for a, b in zip(net.state_dict().values(), untrained.state_dict().values()))
    actions = [agent.act(o) for o in OBSERVATIONS]
    with torch.no_grad():  # act is the greedy action of the network it hands back
        assert actions == net(torch.as_tensor(np.stack(OBSERVATIONS))).argmax(1).tolist()
    agent.save(tmp_path / "agent.pt")
    assert os.listdir(tmp_path) == ["agent.pt"]  # one file, no temp file left
    again = load(tmp_path / "agent.pt")
    assert [again.act(o) for o in OBSERVATIONS] == actions
    assert again.design == design and again.config == agent.config and again.result == agent.result
    assert all(torch.equal(a, b) for a, b in zip(again.q_network.state_dict().values(), net.state_dict().values()))


def test_bad_input_raises_the_clis_one_line_error_before_any_process_starts(env_dir, tmp_path):
    children = set(psutil.Process().children(recursive=True))
    cases = [(("no_such_design",), {}, "design: unknown 'no_such_design'"),
             (("actor_learner",), {"env_id": "my_envs:Corridr-v0"}, "env_id: module 'my_envs' does not register"),
             (("hogwild",), {"lr": -1.0}, "lr:"),
             (("single_env",), {"no_such_key": 1}, "no_such_key: unknown config key"),
             (("actor_learner",), {"env_id": "my_envs:Corridor-v0", "n_step": 150}, "n_step: 150 steps is longer"),
             (("vector_env",), {"checkpoint_path": str(tmp_path)}, "checkpoint_path: ")]
    for args, config, expected in cases:
        with pytest.raises(ConfigError) as err:
            train(*args, **config)
        assert str(err.value).startswith(expected) and "\n" not in str(err.value), str(err.value)
    assert set(psutil.Process().children(recursive=True)) == children


def test_a_config_object_and_keyword_overrides_combine(env_dir):
    agent = train("single_env", DQNConfig(**TINY, seed=7), total_env_steps=600, eval_every=600, learning_starts=100)
    assert agent.config.seed == 7 and agent.result["env_steps"] == 600 and agent.config.hidden_sizes == (16,)
    with pytest.raises(ValueError, match=r"observation of shape \(2,\); this agent takes \(1,\)"):
        agent.act(np.zeros(2, np.float32))


def test_load_refuses_a_file_it_did_not_write(tmp_path):
    torch.save({"format": 2, "net": {}}, tmp_path / "checkpoint.pt")
    with pytest.raises(ValueError, match="is not an agent saved by architectures.Result.save"):
        load(tmp_path / "checkpoint.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="cannot be read as a saved agent"):
        load(tmp_path / "empty.pt")


class _Keeps(NullReporter):
    net = None

    def trained(self, net):
        self.net = net


def test_a_run_hands_over_a_refreshed_copy_that_shares_no_memory(tmp_path):
    """A device learner's host copy is refreshed first (evaluator.before), and the copy handed
    over is the net's own weights in memory of its own: later writes to the net do not reach it."""
    cfg = DQNConfig(total_env_steps=100, learning_starts=0, eval_episodes=0)
    live = build_q_network((4,), 2, (8,), False, 1).share_memory()
    reporter, refreshed = _Keeps(), []
    run = Run("single_env", cfg, reporter, build_q_network((4,), 2, (8,), False, 2))
    run.play_with(live, lambda: refreshed.append(True))
    run.hand_over()
    assert refreshed == [True] and all(torch.equal(a, b) for a, b in zip(reporter.net.parameters(), live.parameters()))
    with torch.no_grad():
        next(live.parameters()).add_(1.0)
    assert not torch.equal(next(reporter.net.parameters()), next(live.parameters()))
    assert not any(p.is_shared() for p in reporter.net.parameters())
    run.reporter = object()  # a reporter without the hook (Sacred's): nothing refreshed, nothing copied
    run.hand_over()
    assert refreshed == [True]


def test_importing_the_package_loads_neither_the_api_nor_torch():
    code = "import sys, architectures; print('architectures.api' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert architectures.train is train and "train" in architectures.__all__


@pytest.mark.slow
def test_the_readme_example_runs_as_printed(env_dir, tmp_path):
    (tmp_path / "example.py").write_text(_readme_block("api-example:"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(env_dir), ROOT])}
    proc = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "same actions after load: True" in proc.stdout and "holdout return:" in proc.stdout
    assert sorted(os.listdir(tmp_path)) == ["corridor.pt", "example.py"]
