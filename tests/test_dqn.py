import copy

import numpy as np
import pytest
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import DQNLearner, FusedAdam, clip_grad_norm
from architectures.core.networks import build_q_network
from architectures.core.schedules import EpsilonSchedule, UpdateRatio


def _net(seed=0, hidden=(8, 8), layer_norm=False):
    return build_q_network((4,), 3, hidden, layer_norm, seed)


def _batch(seed=0, size=16):
    rng = np.random.default_rng(seed)
    return {"obs": rng.standard_normal((size, 4)).astype(np.float32),
            "next_obs": rng.standard_normal((size, 4)).astype(np.float32),
            "action": rng.integers(0, 3, size).astype(np.int64),
            "reward": rng.standard_normal(size).astype(np.float32),
            "discount": rng.choice([0.0, 0.99], size).astype(np.float32)}


def test_fused_adam_matches_torch_optim_bit_for_bit():
    ours, ref = _net(), _net()
    opt_ours = FusedAdam(list(ours.parameters()), lr=1e-2, eps=1e-6)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-2, eps=1e-6, fused=True)
    x = torch.randn(32, 4)
    for _ in range(5):
        for net, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            (net(x) ** 2).mean().backward()
            opt.step()
    for a, b in zip(ours.parameters(), ref.parameters()):
        assert torch.equal(a, b)


def test_fused_adam_state_exists_before_the_first_step():
    opt = FusedAdam(list(_net().parameters()), lr=1e-3)
    assert len(opt.exp_avgs) == len(opt.params) and all(s.item() == 0 for s in opt.steps)


def test_clip_grad_norm_matches_torch():
    a, b = _net(), _net()
    x = torch.randn(8, 4) * 100
    for net in (a, b):
        (net(x) ** 2).sum().backward()
    norm_ours = clip_grad_norm(list(a.parameters()), 1.0)
    norm_ref = torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
    torch.testing.assert_close(norm_ours, norm_ref)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def _expected_loss(learner, batch, double, loss):
    obs, nxt = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["next_obs"])
    with torch.no_grad():
        q_next_target = learner.target(nxt)
        chooser = learner.online(nxt) if double else q_next_target
        boot = q_next_target[torch.arange(len(nxt)), chooser.argmax(1)]
        target = torch.from_numpy(batch["reward"]) + torch.from_numpy(batch["discount"]) * boot
        q = learner.online(obs)[torch.arange(len(obs)), torch.from_numpy(batch["action"])]
        err = q - target
        if loss == "mse":
            return float((err ** 2).mean())
        return float(torch.where(err.abs() < 1, 0.5 * err ** 2, err.abs() - 0.5).mean())


@pytest.mark.parametrize("double", [True, False])
@pytest.mark.parametrize("loss", ["huber", "mse"])
def test_update_loss_matches_the_dqn_target(double, loss):
    cfg = DQNConfig(double_dqn=double, loss=loss, max_grad_norm=0.0, target_update_period=1000)
    learner = DQNLearner(_net(), cfg)
    # Make target differ from online so double DQN matters.
    with torch.no_grad():
        for p in learner.target.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    batch = _batch()
    expected = _expected_loss(learner, batch, double, loss)
    got = learner.update(batch)
    assert got == pytest.approx(expected, rel=1e-6)
    assert learner.version == 1


def test_hard_target_sync_on_period():
    cfg = DQNConfig(target_update_period=3, target_tau=1.0)
    learner = DQNLearner(_net(), cfg)
    before = copy.deepcopy(learner.target.state_dict())
    for i in range(1, 4):
        learner.update(_batch(i))
        same = all(torch.equal(before[k], v) for k, v in learner.target.state_dict().items())
        assert same == (i < 3)
    for a, b in zip(learner.target.parameters(), learner.online.parameters()):
        assert torch.equal(a, b)


def test_polyak_target_sync():
    cfg = DQNConfig(target_update_period=1, target_tau=0.1)
    learner = DQNLearner(_net(), cfg)
    old_target = [p.clone() for p in learner.target.parameters()]
    learner.update(_batch())
    for t_old, t_new, online in zip(old_target, learner.target.parameters(), learner.online.parameters()):
        torch.testing.assert_close(t_new, t_old + 0.1 * (online - t_old))


def test_gradient_step_reduces_the_loss_on_a_fixed_batch():
    cfg = DQNConfig(lr=1e-2, target_update_period=10_000)
    learner = DQNLearner(_net(), cfg)
    batch = _batch(size=64)
    first = learner.update(batch)
    for _ in range(300):
        last = learner.update(batch)
    assert last < first * 0.25


@pytest.mark.parametrize("step,expected", [(0, 1.0), (50, 0.525), (100, 0.05), (10_000, 0.05)])
def test_epsilon_schedule(step, expected):
    assert EpsilonSchedule(1.0, 0.05, 100)(step) == pytest.approx(expected)


def test_epsilon_schedule_without_decay_is_flat():
    assert EpsilonSchedule(1.0, 0.1, 0)(0) == 0.1


@pytest.mark.parametrize("utd,starts,steps,expected", [
    (0.25, 0, 4, 1), (0.25, 0, 7, 1), (0.25, 0, 8, 2), (0.25, 100, 99, 0), (0.25, 100, 104, 1),
    (1.0, 0, 5, 5), (4.0, 10, 12, 8), (0.1, 0, 40_000_000, 4_000_000), (1 / 3, 0, 9, 3),
])
def test_update_ratio_is_exact(utd, starts, steps, expected):
    assert UpdateRatio(utd, starts).target_updates(steps) == expected


def test_realised_ratio_counts_steps_after_learning_starts():
    assert UpdateRatio(0.25, 1000).realised(250, 2000) == 0.25


@pytest.mark.parametrize("hidden", [(8,), (16, 8), (12, 10, 6)])
@pytest.mark.parametrize("loss", ["huber", "mse"])
@pytest.mark.parametrize("double", [True, False])
@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_hand_derived_mlp_gradient_matches_autograd(hidden, loss, double, clip):
    fast_cfg = DQNConfig(loss=loss, double_dqn=double, max_grad_norm=clip, target_update_period=2)
    slow_cfg = fast_cfg.replace(mlp_fast_grad=False)
    fast, slow = DQNLearner(_net(hidden=hidden), fast_cfg), DQNLearner(_net(hidden=hidden), slow_cfg)
    assert fast._mlp_gradient is not None and slow._mlp_gradient is None
    for step in range(5):
        batch = _batch(seed=step, size=32)
        batch["reward"] *= 5  # errors beyond Huber's delta, so both branches of its gradient run
        loss_fast, loss_slow = fast.update(batch), slow.update(batch)
        assert loss_fast == pytest.approx(loss_slow, rel=1e-5, abs=1e-7)
        for p, q in zip(fast.online.parameters(), slow.online.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(fast.last_q_taken, slow.last_q_taken, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,hidden,layer_norm", [((4,), (8,), True), ((10, 10, 4), (8,), False)])
def test_autograd_is_used_where_the_hand_derived_gradient_does_not_apply(shape, hidden, layer_norm):
    learner = DQNLearner(build_q_network(shape, 3, hidden, layer_norm, 0), DQNConfig())
    assert learner._mlp_gradient is None


def test_learner_state_dict_round_trip_continues_identically():
    cfg = DQNConfig(target_update_period=2)
    a = DQNLearner(_net(seed=1), cfg)
    for i in range(3):
        a.update(_batch(i))
    b = DQNLearner(_net(seed=2), cfg)
    b.load_state_dict(a.state_dict())
    assert b.version == a.version == 3
    for i in range(3, 6):
        assert a.update(_batch(i)) == b.update(_batch(i))
    for p, q in zip(list(a.online.parameters()) + list(a.target.parameters()),
                    list(b.online.parameters()) + list(b.target.parameters())):
        assert torch.equal(p, q)


@pytest.mark.parametrize("loss", ["huber", "mse"])
@pytest.mark.parametrize("fast_grad", [True, False])
def test_importance_weights_scale_each_sample_and_ones_change_nothing(loss, fast_grad):
    cfg = DQNConfig(loss=loss, mlp_fast_grad=fast_grad, max_grad_norm=0.0)
    plain, ones, weighted = (DQNLearner(_net(seed=4), cfg) for _ in range(3))
    batch = _batch(seed=9, size=32)
    batch["reward"] *= 5
    w = np.random.default_rng(1).uniform(0.1, 1.0, 32).astype(np.float32)
    assert plain.update(batch) == pytest.approx(ones.update({**batch, "weights": np.ones(32, np.float32)}), rel=1e-6)
    for p, q in zip(plain.online.parameters(), ones.online.parameters()):
        torch.testing.assert_close(p, q)
    # The weighted loss and its gradient, against autograd on the explicitly weighted mean.
    ref = copy.deepcopy(weighted.online)
    obs, nxt = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["next_obs"])
    with torch.no_grad():
        target = torch.from_numpy(batch["reward"]) + torch.from_numpy(batch["discount"]) * weighted.target(nxt).gather(
            1, weighted.online(nxt).argmax(1, keepdim=True)).squeeze(1)
    q = ref(obs).gather(1, torch.from_numpy(batch["action"]).unsqueeze(1)).squeeze(1)
    per = torch.nn.functional.smooth_l1_loss(q, target, reduction="none") if loss == "huber" else (q - target) ** 2
    expected = (per * torch.from_numpy(w)).mean()
    expected.backward()
    got = weighted.update({**batch, "weights": w})
    assert got == pytest.approx(float(expected.detach()), rel=1e-5)
    for p, r in zip(weighted.online.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(weighted.last_td_abs, (q.detach() - target).abs(), rtol=1e-5, atol=1e-6)
