import numpy as np
import pytest
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import DQNLearner
from architectures.core.networks import GreedyPolicy, build_q_network


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("hidden", [(8,), (16, 8), (32, 32, 16)])
def test_numpy_policy_matches_torch_forward(layer_norm, hidden):
    net = build_q_network((4,), 3, hidden, layer_norm, seed=1)
    if layer_norm:  # non-trivial LayerNorm affine parameters
        with torch.no_grad():
            for name, p in net.named_parameters():
                p.add_(torch.randn_like(p) * 0.1)
    policy = GreedyPolicy(net, np.random.default_rng(0))
    obs = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(obs)).numpy()
    got = np.stack([policy.q_values(o) for o in obs])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_policy_sees_learner_updates_without_a_sync_call():
    net = build_q_network((4,), 2, (8,), False, seed=0)
    learner = DQNLearner(net, DQNConfig(lr=0.1))
    policy = GreedyPolicy(learner.online, np.random.default_rng(0))
    obs = np.ones(4, np.float32)
    before = policy.q_values(obs).copy()
    rng = np.random.default_rng(0)
    batch = {"obs": rng.standard_normal((8, 4)).astype(np.float32), "next_obs": np.zeros((8, 4), np.float32),
             "action": np.zeros(8, np.int64), "reward": np.full(8, 10.0, np.float32),
             "discount": np.zeros(8, np.float32)}
    learner.update(batch)
    after = policy.q_values(obs)
    assert not np.allclose(before, after)
    with torch.no_grad():
        np.testing.assert_allclose(after, learner.online(torch.from_numpy(obs)[None])[0].numpy(), rtol=1e-5, atol=1e-6)


def test_minatar_conv_net_shapes_and_policy():
    net = build_q_network((10, 10, 4), 6, (128,), False, seed=0)
    obs = np.zeros((5, 10, 10, 4), dtype=bool)
    assert net(torch.from_numpy(obs)).shape == (5, 6)
    assert sum(p.numel() for p in net.parameters()) == 4 * 16 * 9 + 16 + 1024 * 128 + 128 + 128 * 6 + 6
    action = GreedyPolicy(net, np.random.default_rng(0)).act(obs[0], epsilon=0.0)
    assert 0 <= action < 6


def test_same_seed_same_weights():
    a, b = build_q_network((4,), 2, (8,), False, 3), build_q_network((4,), 2, (8,), False, 3)
    c = build_q_network((4,), 2, (8,), False, 4)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), c.parameters()))


@pytest.mark.parametrize("epsilon,expect_random", [(0.0, False), (1.0, True)])
def test_epsilon_greedy(epsilon, expect_random):
    net = build_q_network((4,), 4, (8,), False, seed=0)
    policy = GreedyPolicy(net, np.random.default_rng(0))
    obs = np.ones(4, np.float32)
    actions = {policy.act(obs, epsilon) for _ in range(200)}
    assert (len(actions) > 1) == expect_random


@pytest.mark.parametrize("layer_norm", [False, True])
def test_batched_acting_matches_one_observation_at_a_time(layer_norm):
    net = build_q_network((4,), 3, (16, 8), layer_norm, 0)
    policy = GreedyPolicy(net, np.random.default_rng(0))
    obs = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    batched = policy.q_values_batch(obs)
    for i in range(5):
        np.testing.assert_allclose(batched[i], policy.q_values(obs[i]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(policy.act_batch(obs, 0.0), batched.argmax(1))
    explore = GreedyPolicy(net, np.random.default_rng(2)).act_batch(np.repeat(obs[:1], 2000, 0), 1.0)
    assert set(np.unique(explore)) == {0, 1, 2}  # epsilon 1: uniform over actions, per env
