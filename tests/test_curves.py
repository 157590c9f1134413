"""run/curves.py on its own: what a watcher's curves say of epsilon, the workers' shares, the
acting weights' age and the roles, from made-up rows and seconds (the runs that write them are
tests/test_event_files.py's)."""

import numpy as np
import pytest

from architectures.core.config import DQNConfig
from architectures.core.diagnostics import PolicyLag
from architectures.run.curves import Curves


class Kept:
    """A reporter that keeps what it is given."""

    def __init__(self):
        self.scalars, self.histograms, self.texts = {}, {}, []

    def scalar(self, name, value, env_steps):
        self.scalars.setdefault(name, []).append((env_steps, value))

    def histogram(self, name, values, env_steps):
        self.histograms.setdefault(name, []).append((env_steps, np.asarray(values)))

    def text(self, name, value, env_steps):
        self.texts.append((name, value, env_steps))


def _rows(steps):
    return np.array([(s,) for s in steps], dtype=[("env_steps", np.int64)])


def test_apex_actors_each_have_their_own_epsilon_curve():
    cfg = DQNConfig(env_id="CartPole-v1", num_workers=4, actor_epsilons="apex")
    kept = Kept()
    curves = Curves(cfg, kept)
    curves.watch_workers(lambda: _rows([100, 100, 100, 100]))
    curves.report(400, 1.0, None, None)
    expected = [0.4 ** (1 + 7 * i / 3) for i in range(4)]  # Horgan et al.: fixed, spread over the actors
    assert [kept.scalars[f"epsilon_actor{i}"][0][1] for i in range(4)] == pytest.approx(expected)
    assert kept.scalars["epsilon"][0][1] == pytest.approx(np.mean(expected))


def test_actors_on_one_schedule_have_one_epsilon_curve():
    cfg = DQNConfig(env_id="CartPole-v1", num_workers=2, eps_start=1.0, eps_end=0.0, eps_decay_steps=1_000)
    kept = Kept()
    curves = Curves(cfg, kept)
    curves.watch_workers(lambda: _rows([200, 198]))  # a step or two apart: 0.6 and 0.604
    curves.report(400, 1.0, None, None)
    assert not any(name.startswith("epsilon_actor") for name in kept.scalars)
    assert kept.scalars["epsilon"][0][1] == pytest.approx(np.mean([1 - 400 / 1_000, 1 - 396 / 1_000]))


def test_a_slow_worker_shows_in_its_share_and_its_own_epsilon():
    cfg = DQNConfig(env_id="CartPole-v1", num_workers=2, eps_start=1.0, eps_end=0.0, eps_decay_steps=1_000)
    kept = Kept()
    curves = Curves(cfg, kept)
    curves.watch_workers(lambda: _rows([300, 100]))  # worker 1 is slow: a quarter of the steps
    curves.report(400, 1.0, None, None)
    assert kept.scalars["worker_share_min"][0][1] == pytest.approx(0.5)  # 0.25 of 2 workers: half its even share
    assert kept.histograms["worker_env_step_share"][0][1] == pytest.approx([0.75, 0.25])
    assert [kept.scalars[f"epsilon_actor{i}"][0][1] for i in range(2)] == pytest.approx([0.4, 0.8])  # own steps x 2


def test_the_acting_weights_age_is_the_window_since_the_last_log():
    kept = Kept()
    curves = Curves(DQNConfig(env_id="CartPole-v1"), kept)
    ages = PolicyLag()
    curves.watch_handoff(ages)
    ages.record(10, np.array([10, 8, 7]))  # learner at version 10; rows acted with versions 10, 8 and 7
    curves.report(100, 1.0, None, None)
    ages.record(20, np.array([19]))
    curves.report(200, 2.0, None, None)
    curves.report(300, 3.0, None, None)  # nothing handed off since: no point
    assert kept.scalars["acting_weight_age_mean"] == [(100, pytest.approx(5 / 3)), (200, 1.0)]
    assert [step for step, _ in kept.histograms["acting_weight_age"]] == [100, 200]


def test_busy_fractions_and_the_bound_which_is_written_again_only_when_it_moves():
    kept = Kept()
    curves = Curves(DQNConfig(env_id="CartPole-v1"), kept)
    seconds = {"learner": {"update": 0.0, "wait": 0.0}, "actors": {"env_step": 0.0, "wait": 0.0}}
    curves.watch_roles(lambda: seconds)
    for step, (learner_wait, actor_wait) in zip((100, 200, 300), ((2.0, 9.0), (2.0, 9.0), (9.0, 2.0))):
        seconds["learner"].update(update=10 - learner_wait, wait=learner_wait)
        seconds["actors"].update(env_step=10 - actor_wait, wait=actor_wait)
        curves.report(step, 10.0, None, None)
    assert kept.scalars["busy_learner"] == [(100, pytest.approx(0.8)), (200, pytest.approx(0.8)),
                                            (300, pytest.approx(0.1))]
    assert [(name, value.split(" (")[0], step) for name, value, step in kept.texts] == [
        ("bound", "learner, mostly update", 100), ("bound", "actors, mostly env_step", 300)]
