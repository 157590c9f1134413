import numpy as np
import pytest

from architectures.core.replay import NStepAdder, ReplayBuffer, Transition


def _t(i: float, source: int = 0, version: int = 0) -> Transition:
    o = np.full(3, i, np.float32)
    return Transition(o, o + 1, int(i) % 2, float(i), 0.5, source, version)


def test_ring_buffer_wraps_and_keeps_the_newest():
    rb = ReplayBuffer(4, (3,), np.float32)
    for i in range(6):
        rb.add(_t(i, source=i % 2, version=10 + i))
    assert (rb.size, rb.cursor, rb.added) == (4, 2, 6)
    stored = sorted(rb.data["reward"].tolist())
    assert stored == [2.0, 3.0, 4.0, 5.0]  # 0 and 1 overwritten
    row = rb.data[rb.data["reward"] == 5.0][0]
    assert row["version"] == 15 and row["source"] == 1 and row["action"] == 1
    np.testing.assert_array_equal(row["next_obs"], np.full(3, 6.0))


def test_sample_is_a_copy_with_consistent_fields():
    rb = ReplayBuffer(100, (3,), np.float32)
    for i in range(50):
        rb.add(_t(i, version=i))
    batch = rb.sample(32, np.random.default_rng(0))
    assert batch["obs"].shape == (32, 3) and batch["action"].shape == (32,)
    # Every field of a sampled row comes from the same transition.
    np.testing.assert_array_equal(batch["obs"][:, 0], batch["reward"])
    np.testing.assert_array_equal(batch["next_obs"][:, 0], batch["reward"] + 1)
    np.testing.assert_array_equal(batch["version"], batch["reward"].astype(np.int64))
    assert batch["reward"].max() < 50
    batch["obs"][:] = -1  # mutating the sample must not touch the buffer
    assert rb.data["obs"].min() >= 0


def test_sampling_empty_buffer_fails_clearly():
    with pytest.raises(RuntimeError, match="empty"):
        ReplayBuffer(4, (3,), np.float32).sample(2, np.random.default_rng(0))


def test_state_dict_round_trip():
    rb = ReplayBuffer(8, (3,), np.float32)
    for i in range(11):
        rb.add(_t(i))
    other = ReplayBuffer(8, (3,), np.float32)
    other.load_state_dict(rb.state_dict())
    assert (other.cursor, other.size, other.added) == (rb.cursor, rb.size, rb.added)
    np.testing.assert_array_equal(other.data, rb.data)


GAMMA = 0.5
# rewards of a 4-step episode, how it ends, n -> expected (reward, discount) per stored transition
NSTEP_CASES = [
    (1, "terminated", [(1, 0.5), (2, 0.5), (3, 0.5), (4, 0.0)]),
    (1, "truncated", [(1, 0.5), (2, 0.5), (3, 0.5), (4, 0.5)]),
    (3, "terminated", [(1 + 0.5 * 2 + 0.25 * 3, 0.125), (2 + 0.5 * 3 + 0.25 * 4, 0.0), (3 + 0.5 * 4, 0.0), (4, 0.0)]),
    (3, "truncated", [(1 + 0.5 * 2 + 0.25 * 3, 0.125), (2 + 0.5 * 3 + 0.25 * 4, 0.125), (3 + 0.5 * 4, 0.25),
                      (4, 0.5)]),
    (10, "terminated", [(1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4, 0.0), (2 + 0.5 * 3 + 0.25 * 4, 0.0),
                        (3 + 0.5 * 4, 0.0), (4, 0.0)]),
]


@pytest.mark.parametrize("n,ending,expected", NSTEP_CASES)
def test_n_step_adder_folds_rewards_and_discounts(n, ending, expected):
    adder = NStepAdder(n, GAMMA, source=3)
    out: list[Transition] = []
    for t in range(4):
        last = t == 3
        out += adder.step(np.array([t], np.float32), t % 2, t + 1, np.array([t + 1], np.float32),
                          terminated=last and ending == "terminated", truncated=last and ending == "truncated",
                          version=100 + t)
    assert [(pytest.approx(tr.reward), tr.discount) for tr in out] == [(pytest.approx(r), d) for r, d in expected]
    # Each transition starts where it should and bootstraps from the right state.
    assert [float(tr.obs[0]) for tr in out] == [0, 1, 2, 3]
    assert [tr.version for tr in out] == [100, 101, 102, 103]
    assert all(tr.source == 3 for tr in out)
    for i, tr in enumerate(out):
        assert float(tr.next_obs[0]) == min(i + n, 4)
    assert not adder.pending


def test_n_step_adder_emits_nothing_until_n_steps():
    adder = NStepAdder(3, 0.9)
    o = np.zeros(1, np.float32)
    assert adder.step(o, 0, 1.0, o, False, False, 0) == []
    assert adder.step(o, 0, 1.0, o, False, False, 0) == []
    assert len(adder.step(o, 0, 1.0, o, False, False, 0)) == 1


# ---------------------------------------------------------------------- prioritized replay
from architectures.core.replay import PrioritizedReplayBuffer, SumTree  # noqa: E402


@pytest.mark.parametrize("capacity", [1, 5, 8, 13])
def test_sum_tree_total_and_search(capacity):
    tree = SumTree(capacity)
    values = np.arange(1, capacity + 1, dtype=float)
    tree.set(np.arange(capacity), values)
    assert tree.total == values.sum()
    edges = np.concatenate([[0], np.cumsum(values)])
    for i in range(capacity):  # the start and the last point of each leaf's interval
        assert tree.find(np.array([edges[i], edges[i + 1] - 1e-9]))[0] == i
        assert tree.find(np.array([edges[i + 1] - 1e-9]))[0] == i
    tree.set(np.array([0, 0]), np.array([5.0, 7.0]))  # repeated index: the last write wins
    assert tree.total == values.sum() - 1 + 7


def _filled_per(n=4, alpha=1.0, beta=1.0):
    buf = PrioritizedReplayBuffer(8, (2,), np.float32, alpha=alpha, beta=beta)
    for k in range(n):
        buf.add(Transition(np.full(2, k, np.float32), np.zeros(2, np.float32), 0, float(k), 1.0, 0, k),
                priority=float(k + 1))
    return buf


def test_prioritized_sampling_follows_priorities_and_weights_correct_the_bias():
    buf = _filled_per(alpha=1.0, beta=1.0)  # priorities 1..4 (+1e-6)
    rng = np.random.default_rng(0)
    counts = np.zeros(4)
    for _ in range(500):
        batch = buf.sample(32, rng)
        counts += np.bincount(batch["indices"], minlength=4)
        assert (batch["obs"][:, 0] == batch["indices"]).all()  # rows match their indices
    np.testing.assert_allclose(counts / counts.sum(), np.arange(1, 5) / 10, atol=0.01)
    batch = buf.sample(32, rng)
    # With beta 1 the weight is 1 / (N P(i)), normalised by the batch max: the rarest row weighs 1.
    expected = (1.0 / (batch["indices"] + 1.0)) / (1.0 / (batch["indices"].min() + 1.0))
    np.testing.assert_allclose(batch["weights"], expected, rtol=1e-4)


def test_priority_updates_and_new_rows_take_the_max_priority():
    buf = _filled_per(alpha=0.5)
    buf.update_priorities(np.array([0, 1]), np.array([15.0, 0.0]))
    assert buf.tree.tree[buf.tree.leaves + 0] == pytest.approx((15.0 + 1e-6) ** 0.5)
    assert buf.tree.tree[buf.tree.leaves + 1] == pytest.approx(1e-6 ** 0.5)
    rows = np.zeros(3, buf.dtype)
    buf.extend(rows)  # no priorities given: the largest seen so far
    for slot in range(4, 7):
        assert buf.tree.tree[buf.tree.leaves + slot] == pytest.approx((15.0 + 1e-6) ** 0.5)
    state = buf.state_dict()
    other = PrioritizedReplayBuffer(8, (2,), np.float32, alpha=0.5, beta=0.4)
    other.load_state_dict(state)
    assert other.tree.total == buf.tree.total and other.max_priority == buf.max_priority
