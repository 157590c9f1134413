"""The MinAtar suite family (analysis/report/learning/suite.py): per-game rows with Holm over the table,
the aggregate over complete games on anchor-normalised returns, and games left out by name."""

import numpy as np
import pytest

from analysis import stats
from analysis.io.load import load_runs
from analysis.report.learning import suite
from tests.synthetic_runs import write_run

SHIFT = {"single_env": 0.0, "actor_learner": 0.0, "vector_env": -0.01, "hogwild": 0.3}
"""Each design's return above single_env's, as a share of the game's anchor."""


def _run(store, sweep, game, arch, seed, final):
    write_run(str(store), f"{sweep}-{game}{arch}{seed}",
              config={"architecture": arch, "num_workers": 1 if arch == "single_env" else 2, "seed": seed,
                      "env_id": f"MinAtar/{game}-v1", "total_env_steps": 500_000},
              result={"env_steps": 500_000, "env_steps_per_sec": 500.0, "train_seconds": 1000.0,
                      "final_holdout_return": final, "runs_at_once": 2,
                      "holdout_curve": [{"env_steps": 250_000, "return_mean": final / 2},
                                        {"env_steps": 500_000, "return_mean": final}]})


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    store = tmp_path_factory.mktemp("suite")
    for game, sweep in (("Breakout", "minatar"), ("Asterix", "minatar_suite"), ("Freeway", "minatar_suite")):
        anchor = suite.ANCHOR[game]
        for i, seed in enumerate(range(101, 106)):
            for arch, shift in SHIFT.items():
                _run(store, sweep, game, arch, seed, anchor * (0.2 + 0.02 * i + shift))
    _run(store, "minatar_suite", "Seaquest", "single_env", 101, 3.0)  # a game begun, not complete
    notes = []
    return suite.data(load_runs([str(store)]), notes.append), notes


def test_the_aggregate_covers_only_complete_games_and_names_the_others(made):
    made, notes = made
    assert made.parts["games"] == ["Breakout", "Asterix", "Freeway"]
    assert made.parts["seeds"] == [101, 102, 103, 104, 105]
    assert any("Seaquest left out of the aggregate" in n and "single_env 1" in n for n in notes)
    numbers = {name: value for name, value, _ in made.numbers}
    assert numbers["MinatarAggGames"] == 3 and numbers["MinatarSuiteRuns"] == 61
    # normalised returns: single_env's seeds at 0.20-0.28 of the anchor on every game, IQM 0.24
    assert numbers["MinatarAggSingleEnvFinal"] == pytest.approx(0.24)
    assert numbers["MinatarAggHogwildFinal"] == pytest.approx(0.54)


def test_a_shift_every_game_shares_is_told_apart_only_in_the_aggregate(made):
    """hogwild beats single_env at every seed of every game: per game its exact rank p is 2/252, too
    weak after Holm over the table's 18 comparisons; over game-seed pairs, relabelled within games,
    the same shift is told apart. actor_learner, equal to single_env, is not."""
    made, _ = made
    numbers = {name: value for name, value, _ in made.numbers}
    assert numbers["MinatarSuiteComparisons"] == 18
    assert numbers["MinatarSuiteSmallestHolm"] == pytest.approx(min(1.0, 18 * 2 / 252))
    assert numbers["MinatarAggHogwildFinalPoi"] == 1.0
    assert numbers["MinatarAggHogwildFinalHolm"] < 0.05
    assert numbers["MinatarAggHogwildFinalVerdict"] == "told apart, better"
    assert numbers["MinatarAggActorLearnerFinalVerdict"] == "not told apart"
    assert numbers["MinatarAggActorLearnerFinalPoi"] == pytest.approx(0.5)
    # the text's sentence, from the same rows: vector_env sits a hair below, hogwild above; Seaquest is begun
    assert numbers["MinatarAggBelowFinal"] == "one"
    assert numbers["MinatarAggToldApart"] == "hogwild on the final return (better); hogwild on the mean return (better)"
    assert (numbers["MinatarSuiteState"], numbers["MinatarSuiteGames"]) == ("partial", 5)
    # the primary-only sensitivity: Holm over the 3 mean-return comparisons, never above the 6-comparison family's
    aggregate = made.tables[1][1].set_index(["design", "measure"])
    for design in ("actor_learner", "vector_env", "hogwild"):
        alone = numbers[f"MinatarAgg{''.join(w.title() for w in design.split('_'))}AucHolmPrimary"]
        assert alone <= numbers[f"MinatarAgg{''.join(w.title() for w in design.split('_'))}AucHolm"]
        assert aggregate.loc[(design, "mean holdout return / anchor"), "Holm p, mean return alone"] == f"{alone:.3f}"
    assert numbers["MinatarAggHogwildAucHolmPrimary"] == pytest.approx(min(1.0, 3 * numbers["MinatarAggHogwildAucP"]))
    # what the suite's own sweep took: 41 runs of 1,000 s (Breakout's 20 are the minatar sweep's)
    assert numbers["MinatarSuiteSweepRuns"] == 41 and numbers["MinatarSuiteTrainHours"] == pytest.approx(41 / 3.6)


def test_profiles_fall_and_the_tables_are_written(made):
    made, _ = made
    profile = made.parts["profile"]
    for _, curve in profile.groupby("design"):
        assert curve["share"].iloc[0] == 1.0 and curve["share"].iloc[-1] == 0.0
        assert np.all(np.diff(curve["share"].to_numpy()) <= 0)
    names = [name for name, _, _ in made.tables]
    assert names == ["minatar_games", "minatar_aggregate", "minatar_anchors", "minatar_sensitivity"]
    games = made.tables[0][1]
    assert set(games["game"]) == {"Breakout", "Asterix", "Freeway", "Seaquest"}
    anchors = made.tables[2][1]
    assert anchors.iloc[0, 1] == "10"  # Breakout's anchor, Young & Tian at 5M frames


def test_the_sensitivity_drops_a_game_at_its_floor_and_a_rescaling_moves_only_the_iqm(tmp_path):
    """Asterix's random play set just under single_env's returns: the game sits at its floor and the first
    check leaves it out; normalising from random play up changes each game's scale and offset, which the
    within-game rank test cannot see: its P and p are the anchor-normalised aggregate's."""
    import json as json_mod

    from analysis.report.framework.common import FigureData

    store = tmp_path / "store"
    for game, sweep in (("Breakout", "minatar"), ("Asterix", "minatar_suite"), ("Freeway", "minatar_suite")):
        for i, seed in enumerate(range(101, 106)):
            for arch, shift in SHIFT.items():
                _run(store, sweep, game, arch, seed, suite.ANCHOR[game] * (0.2 + 0.02 * i + shift))
    runs = suite._runs(load_runs([str(store)]), [].append)
    asterix = suite.ANCHOR["Asterix"] * 0.23  # single_env's IQM ~0.24 of the anchor: under 10% of the way up
    path = tmp_path / "random.json"
    path.write_text(json_mod.dumps({"games": {"Breakout": {"return_mean": 0.4}, "Asterix": {"return_mean": asterix},
                                              "Freeway": {"return_mean": 0.3}}}))
    made, notes = FigureData(runs), []
    games, seeds = ["Breakout", "Asterix", "Freeway"], list(range(101, 106))
    suite._sensitivity(made, runs, games, seeds, notes.append, path=str(path))
    numbers = {name: value for name, value, _ in made.numbers}
    assert (numbers["MinatarSensLearnedGames"], numbers["MinatarSensFloorGames"]) == (2, "Asterix")
    [(name, table, _)] = made.tables
    learned = table[table["check"].str.startswith("learned")]
    assert name == "minatar_sensitivity" and set(learned["games"]) == {"Breakout, Freeway"}
    rescaled = table[table["check"].str.startswith("all")].set_index("design")
    for design in ("actor_learner", "vector_env", "hogwild"):
        anchored = stats.compare(suite.matrix(runs, design, games, seeds, "normalised_auc"),
                                 suite.matrix(runs, "single_env", games, seeds, "normalised_auc"))
        assert rescaled.loc[design, "Monte Carlo p"] == f"{anchored.p:.3f}"
        assert rescaled.loc[design, "P(> single_env) [95% CI]"].startswith(f"{anchored.probability:.2f}")
    assert numbers["MinatarSensRandomHogwildHolm"] < 0.05  # hogwild's shift holds whatever the scale
    missing = []
    suite._sensitivity(FigureData(runs), runs, games, seeds, missing.append, path=str(tmp_path / "none.json"))
    assert "experiments.random_policy" in missing[0]
    # a record written for some games only, or a random return at the anchor: said, and no table
    path.write_text(json_mod.dumps({"games": {"Breakout": {"return_mean": 0.4},
                                              "Asterix": {"return_mean": suite.ANCHOR["Asterix"]}}}))
    partial, lacking = FigureData(runs), []
    suite._sensitivity(partial, runs, games, seeds, lacking.append, path=str(path))
    assert partial.tables == [] and lacking and "Asterix, Freeway" in lacking[0]
