"""Learning at scale (docs/learning-at-scale.md): the scale sweeps run single_env without the
env step's emulated wait, on the claim that the wait changes its seconds and not what it learns. Here
that claim is tested: the same seed, with and without a wait, gives the same holdout returns and the
same logged losses. And the sweeps' grids are what the pre-registration says they are."""

from architectures import train
from experiments.tracking.configs import resolve
from experiments.sweeps.catalog import SWEEPS

TINY = dict(env_id="CartPole-v1", total_env_steps=1_200, learning_starts=300, eval_every=600, eval_episodes=3,
            hidden_sizes=(16,), batch_size=16, buffer_size=1_200, log_every=300, seed=7)


class Recorder:
    """A reporter that keeps every scalar and holdout the run hands the main process."""

    def __init__(self):
        self.scalars, self.holdouts = [], []

    def scalar(self, name, value, env_steps):
        self.scalars.append((name, env_steps, value))

    def holdout(self, result):
        self.holdouts.append((result["env_steps"], list(result["returns"])))

    def progress(self, *args):
        pass


def _learning(record: Recorder) -> tuple:
    timeless = [s for s in record.scalars if s[0] in ("loss", "q_mean", "td_loss", "epsilon")]
    return record.holdouts, timeless


def test_single_env_learns_the_same_with_and_without_a_wait():
    plain, waiting = Recorder(), Recorder()
    train("single_env", reporter=plain, **TINY)
    train("single_env", reporter=waiting, env_step_wait_us=500.0, **TINY)
    assert plain.holdouts and len(plain.holdouts) == 2
    assert _learning(plain) == _learning(waiting)
    assert any(s[0] in ("loss", "td_loss") for s in plain.scalars), "the runs logged no loss to compare"


def test_scale_sweeps_match_their_preregistration():
    for name, workers, games in (("scale_cartpole", {8, 16}, {"CartPole-v1"}),
                                 ("scale_minatar", {16}, {"MinAtar/Breakout-v1", "MinAtar/Freeway-v1",
                                                          "MinAtar/SpaceInvaders-v1"})):
        runs = [resolve(c.named, c.updates) for c in SWEEPS[name].cells["small"]]
        grids = {(r["env_id"], r["eval_every"], r["total_env_steps"]) for r in runs}
        assert {g[0] for g in grids} == games and len({g[1:] for g in grids}) == 1  # one holdout grid
        parallel = [r for r in runs if r["design"] != "single_env"]
        assert {r["num_workers"] for r in parallel} == workers
        assert {r["design"] for r in parallel} == {"actor_learner", "hogwild", "vector_env", "pqn"}
        assert all(r["env_step_wait_us"] == 2_200.0 for r in parallel)
        assert all(r["env_step_wait_us"] == 0.0 for r in runs if r["design"] == "single_env")
        for r in parallel:  # every design's checkpoints on the same env steps: pqn's rollouts end on them
            if r["design"] == "pqn":
                assert r["eval_every"] % (r["rollout_steps"] * r["num_workers"]) == 0


def test_detectable_effect_is_the_exact_tests_threshold():
    """detectable() against scipy's exact rank-sum test over every split of n + m ranks."""
    from itertools import combinations

    from scipy.stats import mannwhitneyu

    from analysis.report.learning.at_scale import detectable

    for n, m, level in ((5, 5, 0.05), (5, 5, 0.0125), (4, 6, 0.05)):
        called = []
        for chosen in combinations(range(n + m), n):
            x = list(chosen)
            y = [v for v in range(n + m) if v not in chosen]
            test = mannwhitneyu(x, y, method="exact", alternative="two-sided")
            if test.pvalue < level and test.statistic > n * m / 2:
                called.append(test.statistic / (n * m))
        assert detectable(n, m, level) == min(called)
    assert detectable(10, 10, 0.0125) == 0.83 and detectable(10, 10, 0.05) == 0.77
    assert detectable(5, 5, 0.05 / 12) != detectable(5, 5, 0.05 / 12)  # nan: 5 v 5 cannot reach it


def test_the_equivalence_scales_are_the_earlier_sweeps_single_env_medians():
    """SCALES, fixed in docs/learning-at-scale.md before the remaining MinAtar runs were read, are
    single_env's median final holdout return at 500k env steps in the committed `minatar` (Breakout)
    and `minatar_suite` sweeps, and CartPole's cap, which every scale_cartpole single_env run ends at."""
    import numpy as np

    from analysis.io.load import load_runs
    from analysis.report.learning import at_scale
    from analysis.report.framework.common import committed

    rs = load_runs([committed("results", "reference", s) for s in ("minatar", "minatar_suite", "scale_cartpole")])
    single = rs.runs[rs.runs["design"] == "single_env"]
    for game, sweep in (("Breakout", "minatar"), ("Freeway", "minatar_suite"), ("SpaceInvaders", "minatar_suite")):
        finals = single[(single["env"] == game) & (single["sweep"] == sweep)]
        assert sorted(finals["seed"]) == [101, 102, 103, 104, 105]
        assert set(finals["total_env_steps"]) == {500_000}
        assert round(float(np.median(finals["final_holdout_return"])), 1) == at_scale.SCALES[game]
    cartpole = single[single["sweep"] == "scale_cartpole"]
    assert len(cartpole) == 10 and set(cartpole["final_holdout_return"]) == {at_scale.SCALES["CartPole"]}
    assert at_scale.THRESHOLDS["CartPole"] == 475.0  # gymnasium's reward_threshold for CartPole-v1
