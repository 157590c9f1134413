"""Configs that would exhaust the machine, or mean nothing, are refused before anything runs.

The fuzz table: each bad value fails with a one-line ConfigError naming its key, either when the
config is built (config._validate: pure bounds) or in `architectures.preflight` (limits.py: cores,
memory, CUDA, the env's episode cap), which experiments/train.py runs before Sacred records a
run. The machine is fixed here (2 cores, 16 GB available, no CUDA) so the table reads the same on
every host; the repo's own named configs and sweep cells must still pass on it.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from architectures import preflight
from architectures.core import limits
from architectures.core.config import ConfigError, DQNConfig
from architectures.core.envs import env_spec
from architectures.core.networks import build_q_network
from architectures.core.replay import make_replay
from architectures.run import worker_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORES, MEMORY = 2, 16 * 10**9


@pytest.fixture
def small_machine(monkeypatch):
    """2 cores, 16 GB available, no CUDA: the machine every row below is judged on."""
    monkeypatch.setattr(limits, "available_cores", lambda: CORES)
    monkeypatch.setattr(limits, "available_memory_bytes", lambda: MEMORY)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# (architecture or None for the config alone, values, the key the one-line message starts with)
REFUSED = [
    (None, dict(seed=2**70), "seed"),                           # a numpy traceback naming nothing, before
    (None, dict(seed=2**32), "seed"),
    (None, dict(utd=1e6), "utd"),
    (None, dict(n_step=100_000), "n_step"),
    (None, dict(eval_episodes=100_000), "eval_episodes"),
    (None, dict(env_step_cost_us=1e12), "env_step_cost_us"),
    (None, dict(slow_worker_cost_us=1e12), "slow_worker_cost_us"),
    (None, dict(batch_size=4096, buffer_size=1000), "batch_size"),
    (None, dict(env_step_cost_us=1e6, worker_timeout_s=0.5), "worker_timeout_s"),
    (None, dict(device="cuda0"), "device"),
    ("actor_learner", dict(num_workers=1000), "num_workers"),  # spawned ~150 MB every ~3 s until OOM
    ("hogwild", dict(num_workers=1000), "num_workers"),
    ("vector_env", dict(num_workers=65), "num_workers"),
    ("single_env", dict(buffer_size=10**10), "buffer_size"),    # a 596 GiB allocation, after recording
    ("actor_learner", dict(buffer_size=10**9, prioritized=True), "buffer_size"),
    ("hogwild", dict(buffer_size=10**9, num_workers=4), "buffer_size"),
    ("hogwild", dict(buffer_size=10**9, hogwild_replay="shared"), "buffer_size"),
    ("single_env", dict(env_id="MinAtar/Breakout-v1", max_episode_steps=108_000, buffer_size=10**8), "buffer_size"),
    ("single_env", dict(hidden_sizes=[10**9]), "hidden_sizes"),  # a 16 GB network, several times over
    ("actor_learner", dict(hidden_sizes=[10**9]), "hidden_sizes"),
    ("high_utd", dict(utd=4.0, hidden_sizes=[50_000, 50_000]), "hidden_sizes"),
    ("single_env", dict(torch_threads=1000), "torch_threads"),
    ("single_env", dict(torch_threads=3), "torch_threads"),
    ("single_env", dict(device="cuda"), "device"),
    ("single_env", dict(n_step=600), "n_step"),                 # CartPole-v1's episodes end at 500 steps
    ("vector_env", dict(env_id="Acrobot-v1", n_step=501), "n_step"),
]


@pytest.mark.parametrize("architecture,values,key", REFUSED)
def test_a_config_beyond_the_machine_or_meaning_is_refused_naming_its_key(small_machine, architecture, values,
                                                                           key):
    with pytest.raises(ConfigError) as err:
        cfg = DQNConfig.from_dict(values)
        assert architecture is not None, f"{values} was accepted by the config alone"
        preflight(architecture, cfg)
    message = str(err.value)
    assert message.startswith(f"{key}:") and "\n" not in message, message


def test_a_refusal_says_the_need_and_the_limit(small_machine, monkeypatch):
    with pytest.raises(ConfigError, match=r"^num_workers: 1,000 actor processes on 2 core\(s\); at most 64 "):
        preflight("actor_learner", DQNConfig(num_workers=1000))
    monkeypatch.setattr(limits, "available_cores", lambda: 64)  # enough cores: memory is the limit
    with pytest.raises(ConfigError, match=r"^num_workers: 1,000 actor processes need ~157.3 GB, 16.0 GB is available$"):
        preflight("actor_learner", DQNConfig(num_workers=1000))
    with pytest.raises(ConfigError, match=r"^buffer_size: a replay of 10,000,000,000 transitions of 64 B needs "
                                          r"~640.0 GB, 16.0 GB is available$"):
        preflight("single_env", DQNConfig(buffer_size=10**10))
    with pytest.raises(ConfigError, match=r"^device: 'cuda' but torch.cuda.is_available\(\) is false on this machine$"):
        preflight("single_env", DQNConfig(device="cuda"))


def _named(*names: str, **updates) -> tuple[str, DQNConfig]:
    from experiments.tracking.configs import NAMED_CONFIGS

    values = DQNConfig().to_dict()
    for name in names:
        values.update(NAMED_CONFIGS[name])
    values.update(updates)
    return values.pop("design", "single_env"), DQNConfig.from_dict(values)


ENVS = ("cartpole", "minatar_breakout", "minatar_breakout_cpu", "minatar_asterix", "minatar_freeway")
DESIGNS = ("single_env", "actor_learner", "vector_env", "hogwild", "high_utd")
ACCEPTED = [(env, design, {}) for env in ENVS for design in DESIGNS] + [
    ("cartpole", design, dict(num_workers=n, buffer_size=5_000)) for design in ("actor_learner", "vector_env", "hogwild")
    for n in (16, 64)] + [
    ("cartpole", "high_utd", dict(utd=16.0, layer_norm=True)),
    ("cartpole", "single_env", dict(seed=2**32 - 1, n_step=500, torch_threads=2, eval_episodes=1_000)),
    ("minatar_breakout", "actor_learner", dict(num_workers=8, prioritized=True, n_step=1_000)),
]


@pytest.mark.parametrize("env,design,updates", ACCEPTED)
def test_the_repos_named_configs_still_pass(small_machine, env, design, updates):
    architecture, cfg = _named(env, design, **updates)
    preflight(architecture, cfg)


def test_every_sweep_cell_still_passes(small_machine):
    from experiments.tracking.configs import algorithm_values
    from experiments.sweeps.grid import expand
    from experiments.sweeps.catalog import SCALES, SWEEPS

    seen = set()
    for sweep in SWEEPS.values():
        for scale in SCALES:
            for run in expand(sweep, scale, 1):
                if run.experiment != "train":
                    continue
                config = algorithm_values(run.config())
                config["checkpoint_path"] = f"{run.run_id}.pt"  # as the sweep gives every run
                key = (run.architecture, json.dumps(config, sort_keys=True))
                if key not in seen:
                    seen.add(key)
                    preflight(run.architecture, DQNConfig.from_dict(config))
    assert len(seen) > 20


@pytest.mark.parametrize("env_id", ["CartPole-v1", "MinAtar/Breakout-v1"])
@pytest.mark.parametrize("hidden,layer_norm", [((128, 128), False), ((64, 32, 16), True), ((128,), False)])
def test_parameter_shapes_are_the_networks_own(env_id, hidden, layer_norm):
    spec = env_spec(env_id)
    net = build_q_network(spec.obs_shape, spec.num_actions, hidden, layer_norm, seed=0)
    assert limits.parameter_shapes(spec, hidden, layer_norm) == [tuple(p.shape) for p in net.parameters()]


@pytest.mark.parametrize("env_id", ["CartPole-v1", "MinAtar/Breakout-v1"])
@pytest.mark.parametrize("prioritized", [False, True])
def test_replay_bytes_are_the_replays_own(env_id, prioritized):
    spec = env_spec(env_id)
    cfg = DQNConfig(env_id=env_id, buffer_size=3_000, prioritized=prioritized)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    allocated = replay.data.nbytes + (replay.tree.tree.nbytes if prioritized else 0)
    assert limits.replay_bytes(cfg, spec, cfg.buffer_size) == allocated


def test_the_shared_memory_check_builds_no_network(monkeypatch):
    """A 16 GB network is refused by counting its shapes, not by allocating it first."""
    import architectures.core.networks

    def refuse(*args, **kwargs):
        raise AssertionError("built a network")

    monkeypatch.setattr(architectures.core.networks, "build_q_network", refuse)
    monkeypatch.setattr(worker_rows, "check_shared_memory", lambda needs, what: needs)
    spec = env_spec("CartPole-v1")
    seen = []
    worker_rows.check_design_memory(DQNConfig(hidden_sizes=(10**9,)), lambda c, s, shapes: seen.append(shapes), "test")
    assert math.prod(seen[0][0]) == 10**9 * int(np.prod(spec.obs_shape))


def test_available_memory_reads_the_machine():
    available = limits.available_memory_bytes()
    assert available is None or 0 < available


def test_the_command_line_refuses_a_thousand_workers_and_records_nothing(tmp_path):
    cores = limits.available_cores()
    memory = limits.available_memory_bytes()
    if limits.worker_limit(cores) >= 1000 and (memory is None or memory > 1000 * limits.WORKER_PROCESS_BYTES):
        pytest.skip(f"this machine ({cores} cores, {memory} bytes free) could hold 1,000 actors")
    out = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "experiments.train", "with", "num_workers=1000",
                           "design=actor_learner", "-F", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: num_workers: 1,000 actor processes "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() or not any(p.name.isdigit() for p in out.iterdir())
