import numpy as np
import pytest

from architectures.replay import NStepAdder, ReplayBuffer, Transition


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
