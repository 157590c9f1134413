"""The learner off the host (CUDA), checked on a machine without a GPU.

The meta device has shapes and no data: a `.numpy()`, `.item()`, `float()` or host copy of a meta
tensor raises, and so does an op that mixes one with a CPU tensor, where CUDA would fail (a device
mismatch, `.numpy()` of CUDA weights) or silently synchronise (a host read per update). So each
learner, the device replay, the whole device update and every design with a learner run on meta
here; the sanctioned crossings (core/device.py) read meta as zeros. Tests marked `cuda` run the
same paths, and the CUDA graph, where a GPU is present, and are skipped elsewhere, saying so.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from architectures import get_train_fn, preflight
from architectures.core.config import ConfigError, DQNConfig
from architectures.core.device import ActingWeights
from architectures.core.device_replay import DeviceReplay
from architectures.core.device_step import DeviceStep
from architectures.core.dqn import DQNLearner
from architectures.core.networks import build_q_network
from architectures.core.replay import ReplayBuffer, Transition
from architectures.transport.variables import WeightPublisher

SHAPES = {"mlp": ((4,), 2, (16, 16), False), "mlp_layer_norm": ((4,), 2, (16, 16), True),
          "conv": ((10, 10, 4), 3, (32,), False)}


def _replay(rows: int, capacity: int, obs_shape: tuple, actions: int, seed: int = 0) -> ReplayBuffer:
    rng = np.random.default_rng(seed)
    replay = ReplayBuffer(capacity, obs_shape, np.float32)
    for i in range(rows):
        replay.add(Transition(rng.random(obs_shape, np.float32), rng.random(obs_shape, np.float32),
                              int(rng.integers(actions)), float(rng.random()), 0.99 * float(rng.random() < 0.9),
                              i % 2, i // 10))
    return replay


def _learner(shape: str, device: str, **cfg) -> DQNLearner:
    obs_shape, actions, hidden, layer_norm = SHAPES[shape]
    net = build_q_network(obs_shape, actions, hidden, layer_norm, seed=3)
    return DQNLearner(net, DQNConfig(hidden_sizes=hidden, layer_norm=layer_norm, batch_size=8,
                                     target_update_period=5, **cfg), device=device)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_adam_state_lives_on_each_parameters_device(shape):
    """CUDA's fused Adam reads its step counts on the parameters' device; counts made on the CPU
    failed every CUDA update ('state_steps is on cpu') and meta's kernel does not check it: so
    this test checks where every state tensor lives."""
    learner = _learner(shape, "meta")
    opt = learner.optimizer
    assert {t.device.type for t in opt.exp_avgs + opt.exp_avg_sqs + opt.steps + opt.params} == {"meta"}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_device_update_reads_nothing_back_and_mixes_no_host_tensor(shape):
    """Twenty whole updates on meta (sample, gradient, clip, Adam, the diagnostics, four target
    syncs): any host read or CPU tensor in the device's ops would raise."""
    obs_shape, actions = SHAPES[shape][:2]
    learner = _learner(shape, "meta")
    replay = _replay(300, 500, obs_shape, actions)
    device_replay = DeviceReplay(replay, torch.device("meta"), batch_size=8, seed=1)
    step = DeviceStep(learner, device_replay, sources=2)
    device_replay.sync()
    for _ in range(20):
        step()
    assert learner.version == 20
    assert learner.last_q_taken.device.type == "meta" and step.loss_sum.device.type == "meta"


def test_the_host_update_on_a_device_is_caught_reading_back():
    """The check above can fail: the host path's update reads its loss on the host (fine on the
    CPU, a synchronisation per update on CUDA), and meta refuses that read."""
    learner = _learner("mlp", "meta")
    batch = _replay(50, 50, (4,), 2).sample(8, np.random.default_rng(0))
    with pytest.raises((RuntimeError, NotImplementedError)):
        learner.update(batch)


def test_the_device_replay_mirrors_the_host_rows_across_a_wrap():
    replay = _replay(30, 50, (4,), 2)
    mirror = DeviceReplay(replay, torch.device("cpu"), batch_size=64, seed=5)
    mirror.sync()
    rng = np.random.default_rng(9)
    for i in range(40):  # past capacity: the ring wraps, and the sync copies two slices
        replay.add(Transition(rng.random(4, np.float32), rng.random(4, np.float32), 1, float(i), 0.5, 1, 1000 + i))
    mirror.sync()
    raw = replay.data.view(np.uint8).reshape(replay.capacity, -1)
    assert np.array_equal(mirror.rows.numpy(), raw)
    mirror.prepare()
    batch = mirror.sample()
    indices = (mirror.uniforms[0] * replay.size).long().numpy()
    assert indices.min() >= 0 and indices.max() < replay.size
    for name in ("obs", "next_obs", "action", "reward", "discount", "source", "version"):
        assert np.array_equal(batch[name].numpy(), replay.data[name][indices]), name


@pytest.mark.parametrize("fast_grad", [False, True])
def test_the_eager_device_step_gives_the_host_updates(fast_grad):
    """The device's update (what CUDA runs, and what its graph captures) against the host's on the
    same batches: the same parameters, bit for bit, after 12 updates and two target syncs."""
    host, device = (_learner("mlp", "cpu", mlp_fast_grad=fast_grad) for _ in range(2))
    replay = _replay(200, 200, (4,), 2)
    mirror = DeviceReplay(replay, torch.device("cpu"), batch_size=8, seed=2)
    mirror.sync()
    step = DeviceStep(device, mirror)
    for _ in range(12):
        step()
    losses = 0.0
    for k in range(12):
        indices = (mirror.uniforms[k] * replay.size).long().numpy()
        rows = replay.data[indices]
        losses += host.update({name: rows[name] for name in replay.dtype.names})
    for a, b in zip(host.online.parameters(), device.online.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(host.target.parameters(), device.target.parameters()):
        assert torch.equal(a, b)
    assert step.read_loss() == pytest.approx(losses, rel=1e-5)


def test_acting_weights_cross_in_one_copy_per_publication():
    online = build_q_network((4,), 2, (8, 8), False, seed=1)
    acting = ActingWeights(online, copy_on_host=True)
    assert acting.separate and all(np.shares_memory(a, p.detach().numpy())
                                   for a, p in zip(acting.arrays, acting.net.parameters()))
    with torch.no_grad():
        for p in online.parameters():
            p.add_(1.0)
    assert not any(torch.equal(a, b) for a, b in zip(online.parameters(), acting.net.parameters()))
    publisher = WeightPublisher(acting, period=10)  # the one publication rule
    publisher.after_update(7)  # not on the period: nothing crosses
    assert acting.version == 0
    publisher.after_update(10)
    assert acting.version == 10
    assert all(torch.equal(a, b) for a, b in zip(online.parameters(), acting.net.parameters()))
    assert ActingWeights(online).net is online  # a host learner's weights are acted with directly


DESIGNS = ["single_env", "high_utd", "actor_learner", "vector_env", "pqn"]


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.slow
def test_every_design_with_a_learner_runs_it_on_a_device(design):
    """Each design, end to end, with its learner on meta: acting on the host copy, the replay's rows
    crossing to the device, the updates there, the holdout and the logs reading it."""
    workers = {"actor_learner": 2, "vector_env": 2, "pqn": 2}.get(design, 1)
    cfg = DQNConfig(device="meta", total_env_steps=1_200, learning_starts=200, eval_every=600, eval_episodes=1,
                    log_every=200, hidden_sizes=(16, 16), batch_size=16, buffer_size=1_000, num_workers=workers,
                    layer_norm=design == "pqn", rollout_steps=50)
    preflight(design, cfg)
    result = get_train_fn(design)(cfg)
    assert result["env_steps"] >= 1_200 and result["updates"] > 0
    assert [c["env_steps"] for c in result["holdout_curve"]][-1] >= 1_200 and len(result["holdout_curve"]) == 2


def test_hogwild_refuses_a_device_in_one_line_before_any_work():
    with pytest.raises(ConfigError, match="^device: hogwild's workers write into shared parameters in CPU memory"):
        preflight("hogwild", DQNConfig(device="meta", num_workers=2))


def test_the_cuda_graph_is_captured_for_a_cuda_learner_only():
    """cuda_graph is on by default: a CPU run ignores it, and a device that is not CUDA runs eagerly."""
    from architectures.run.base import Run
    from architectures.run.learning import ReplayLearning

    cfg = DQNConfig(hidden_sizes=(16, 16), batch_size=8)
    assert cfg.cuda_graph and DQNConfig(device="cpu", cuda_graph=True).device == "cpu"
    learner = _learner("mlp", "meta")
    learning = ReplayLearning(Run("single_env", cfg.replace(device="meta", eval_episodes=0), None, learner.online),
                              learner, _replay(50, 100, (4,), 2))
    assert learning.device_step is not None and learning.device_step.use_graph is False


# ---------------------------------------------------------------------- on a GPU (skipped elsewhere)
@pytest.mark.cuda
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_cuda_graph_replays_the_eager_updates(shape):
    obs_shape, actions = SHAPES[shape][:2]
    replay = _replay(400, 500, obs_shape, actions)
    learners, steps = [], []
    for graph in (False, True):
        learner = _learner(shape, "cuda")
        mirror = DeviceReplay(replay, learner.device, batch_size=8, seed=4)
        mirror.sync()
        learners.append(learner)
        steps.append(DeviceStep(learner, mirror, sources=2, graph=graph))
    for _ in range(30):
        for step in steps:
            step()
    for a, b in zip(learners[0].online.parameters(), learners[1].online.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert steps[0].read_loss() == pytest.approx(steps[1].read_loss(), rel=1e-4)
    assert steps[0].read_sampled().tolist() == steps[1].read_sampled().tolist()


@pytest.mark.cuda
def test_a_cuda_update_matches_the_cpu_update():
    batch = _replay(100, 100, (4,), 2).sample(8, np.random.default_rng(0))
    cpu, gpu = _learner("mlp", "cpu", mlp_fast_grad=False), _learner("mlp", "cuda")
    assert gpu.update(batch) == pytest.approx(cpu.update(batch), rel=1e-5)
    for a, b in zip(cpu.online.parameters(), gpu.online.parameters()):
        torch.testing.assert_close(a, b.cpu(), rtol=1e-5, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.parametrize("design,graph", [(d, False) for d in DESIGNS] + [("single_env", True), ("actor_learner", True)])
def test_every_design_runs_with_a_cuda_learner(design, graph):
    workers = {"actor_learner": 2, "vector_env": 2, "pqn": 2}.get(design, 1)
    cfg = DQNConfig(device="cuda", cuda_graph=graph and design != "pqn", total_env_steps=3_000, learning_starts=500,
                    eval_every=1_500, eval_episodes=2, hidden_sizes=(32, 32), batch_size=32, num_workers=workers,
                    layer_norm=design == "pqn", rollout_steps=64)
    preflight(design, cfg)
    result = get_train_fn(design)(cfg)
    assert result["env_steps"] >= 3_000 and result["updates"] > 0
    assert np.isfinite(result["final_holdout_return"])
