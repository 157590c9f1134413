"""The MinAtar suite: does what Breakout showed hold on four more games?

Reads Breakout's headline runs (the `minatar` sweep) and the `minatar_suite` sweep's Asterix,
Freeway, Space Invaders and Seaquest runs: every game with one hyperparameter set (`minatar_cpu`,
Breakout's calibrated values), 500k env steps, single_env and the three parallel designs at 2
workers; high_utd only on Breakout. These runs were made two at a time, so they carry no speed:
the suite answers "does it learn as well", and the scaling sweep answers "how fast".

Per game: each design's final holdout return and mean holdout return over checkpoints (IQM over
seeds, 95% stratified-bootstrap interval), and P(design > single_env) on each with the exact rank
test's p, Holm-corrected over every learning comparison of the table.

Across games (Agarwal et al. 2021), on returns divided by the game's anchor (Young & Tian's DQN
at 5M frames, read by eye from their curves: a scale that makes games commensurable, not a bar
to clear at a tenth of their budget): the aggregate IQM over every game x seed run with
stratified-bootstrap intervals, performance profiles, and P(design > single_env) over game-seed
pairs with the stratified rank test (stats.stratified_rank_test_p), Holm-corrected over the
designs and measures. A game enters the aggregate only where every design has the same full set
of seeds, so the (runs, games) matrix is complete; the others are named and left out.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import EQUIVALENCE_MARGIN, verdict
from analysis.report.framework.common import (ARCH_ORDER, FigureData, Note, ci, committed, diverged, holdout_auc,
                                              macro_name)

SUITE_SWEEPS = ("minatar", "minatar_suite")
GAMES = ("Breakout", "Asterix", "Freeway", "SpaceInvaders", "Seaquest")
DESIGNS = ("single_env", "actor_learner", "vector_env", "hogwild")
"""The designs every game runs; high_utd appears in Breakout's rows only, outside the aggregate."""
ANCHOR = {"Breakout": 10.0, "Asterix": 17.0, "Freeway": 50.0, "SpaceInvaders": 43.0, "Seaquest": 20.0}
"""Young & Tian (2019) DQN's final return at 5M frames, read by eye from their curves (30 runs;
Freeway's by ~1.5M frames; Seaquest's before MinAtar v1.0.10's oxygen fix): ../shared/reference-numbers.md."""
ANCHOR_FRAMES = 5_000_000
MEASURES = {"final_holdout_return": "final holdout return", "holdout_auc": "mean holdout return"}
PROFILE_POINTS = 41
"""Thresholds of the performance profile, from 0 to the largest normalised score."""


def _runs(rs: RunSet, note: Note) -> pd.DataFrame:
    runs = rs.runs[rs.runs["sweep"].isin(SUITE_SWEEPS) & rs.runs["env"].isin(GAMES)].copy()
    out = runs[diverged(runs)]
    for run_id in out["run_id"]:
        note(f"minatar suite: run {run_id} diverged; left out")
    runs = runs[~diverged(runs)]
    runs["holdout_auc"] = holdout_auc(rs.holdout, runs["run_id"])
    runs["normalised_final"] = runs["final_holdout_return"] / runs["env"].map(ANCHOR)
    runs["normalised_auc"] = runs["holdout_auc"] / runs["env"].map(ANCHOR)
    return runs


def _complete_games(runs: pd.DataFrame, note: Note) -> tuple[list[str], list[int]]:
    """The games where every DESIGN has the same, fullest set of seeds; the seeds."""
    seed_sets = {(g, d): frozenset(runs.loc[(runs["env"] == g) & (runs["design"] == d), "seed"])
                 for g in GAMES for d in DESIGNS}
    full = max(seed_sets.values(), key=len)
    games = [g for g in GAMES if all(seed_sets[g, d] >= full for d in DESIGNS)]
    for game in GAMES:
        if game not in games:
            have = ", ".join(f"{d} {len(seed_sets[game, d])}" for d in DESIGNS)
            note(f"minatar suite: {game} left out of the aggregate: it lacks some of seeds "
                 f"{min(full)}-{max(full)} ({have}); resume `python -m experiments.sweep minatar_suite "
                 "--jobs 2 --nice` (into results/sweeps/minatar_suite; results/reference/ holds the committed runs)")
    return games, sorted(full)


def matrix(runs: pd.DataFrame, design: str, games: list[str], seeds: list[int], column: str) -> np.ndarray:
    """(seeds, games) of one design's `column`."""
    part = runs[(runs["design"] == design) & runs["seed"].isin(seeds)]
    return part.pivot_table(index="seed", columns="env", values=column).loc[seeds, games].to_numpy(dtype=float)


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = _runs(rs, note)
    if runs.empty or not (runs["sweep"] == "minatar_suite").any():
        note("minatar suite: no runs of the `minatar_suite` sweep; run `python -m experiments.sweep minatar_suite "
             "--jobs 2 --nice`")
        return None
    made = FigureData(runs[["run_id", "env", "design", "num_workers", "seed", "final_holdout_return",
                            "holdout_auc", "normalised_final", "normalised_auc"]].sort_values(["env", "design", "seed"]))
    _per_game(made, runs)
    games, seeds = _complete_games(runs, note)
    made.number("MinatarSuiteRuns", len(runs), "{:d}")
    made.number("MinatarSuiteGamesComplete", len(games), "{:d}")
    made.number("MinatarSuiteGames", len(GAMES), "{:d}")
    own = runs[runs["sweep"] == "minatar_suite"]  # what the suite's own sweep took (Breakout's runs came first)
    made.number("MinatarSuiteSweepRuns", len(own), "{:d}")
    made.number("MinatarSuiteTrainHours", own["train_seconds"].sum() / 3600, "{:.1f}")
    made.number("MinatarSuiteRunMinutes", own["train_seconds"].median() / 60, "{:.0f}")
    # the text says whether the suite is whole from the runs, not from when it was written
    complete = len(games) == len(GAMES)
    made.number("MinatarSuiteState", "complete" if complete else "partial")
    made.number("MinatarSuiteLeftOut", "every game enters the aggregate" if complete else
                "the other games are still running, and the aggregate counts only complete games")
    made.parts.update(games=games, seeds=seeds)
    if len(games) >= 2:
        _aggregate(made, runs, games, seeds)
    else:
        note("minatar suite: fewer than 2 games have every design at every seed; no aggregate yet")
    _anchors(made, runs)
    if len(games) >= 2:
        _sensitivity(made, runs, games, seeds, note)
    return made


RANDOM_POLICY = committed("results", "reference", "random_policy.json")
"""The uniform random policy's holdout return per game (`python -m experiments.random_policy`)."""
LEARNED_SHARE = 0.1
"""A game counts as learned where single_env's final return (IQM over seeds) is at least this share of
the way from the random policy's return to the anchor; below it, the game sits at its floor."""


def _random_returns(path: str, note: Note) -> dict[str, float]:
    if not os.path.exists(path):
        note(f"minatar sensitivity: no random-policy returns at {path}; `python -m experiments.random_policy "
             f"--out {os.path.relpath(path, committed())}` writes them")
        return {}
    with open(path) as f:
        return {game: float(r["return_mean"]) for game, r in json.load(f)["games"].items()}


def _sensitivity(made: FigureData, runs: pd.DataFrame, games: list[str], seeds: list[int], note: Note,
                 path: str | None = None) -> None:
    """Two checks a reviewer asked of the aggregate, on the primary measure: the games the designs learned
    (LEARNED_SHARE, judged on every design's runs together, not on one arm), and every game normalised
    from random play up, (return - random) / (anchor - random). P(X > Y) and the stratified rank test
    compare runs within a game, so a per-game rescaling cannot move them: the second check moves the IQM
    and the shift in shares of the scale. Sensitivity p's only, no verdict words: these families were
    not the ones fixed before the runs."""
    random = _random_returns(RANDOM_POLICY if path is None else path, note)
    if not random:
        return
    lacking = [g for g in games if g not in random or not ANCHOR[g] > random[g]]
    if lacking:
        note(f"minatar sensitivity: no random-policy return below the anchor for {', '.join(lacking)}; "
             "not run (rerun `python -m experiments.random_policy` for every game)")
        return
    mine = runs[runs["seed"].isin(seeds) & runs["design"].isin(DESIGNS)]
    learned = [g for g in games if (stats.iqm(mine.loc[mine["env"] == g, "final_holdout_return"]) - random[g])
               >= LEARNED_SHARE * (ANCHOR[g] - random[g])]
    frame = runs.copy()
    frame["from_random"] = (frame["holdout_auc"] - frame["env"].map(random)) / (
        frame["env"].map(ANCHOR) - frame["env"].map(random))
    checks = {"learned games, / anchor": (learned, "normalised_auc"), "all games, from random": (games, "from_random")}
    rows = []
    for check, (kept, column) in checks.items():
        if len(kept) < 2:
            note(f"minatar sensitivity: fewer than 2 games in '{check}' ({', '.join(kept) or 'none'}); not run")
            continue
        scores = {d: matrix(frame, d, kept, seeds, column) for d in DESIGNS}
        tested = [(d, stats.compare(scores[d], scores["single_env"])) for d in DESIGNS[1:]]
        shifts = stats.equivalence_with_holm([stats.equivalence_test(scores[d], scores["single_env"], EQUIVALENCE_MARGIN,
                                                                     family=len(tested)) for d, _ in tested])
        for (design, vs), corrected, eq in zip(tested, stats.with_holm([vs for _, vs in tested]), shifts):
            rows.append({"check": check, "games": ", ".join(kept), "design": design,
                         "IQM [95% CI]": ci(*stats.interval(scores[design]), fmt="{:.2f}"),
                         "single_env IQM": f"{stats.iqm(scores['single_env']):.2f}",
                         "P(> single_env) [95% CI]": ci(corrected.probability, corrected.low, corrected.high, fmt="{:.2f}"),
                         "Monte Carlo p": f"{corrected.p:.3f}", "Holm p": f"{corrected.holm:.3f}",
                         "shift [90% CI], shares of the scale": f"{eq.shift.estimate:+.3f} [{eq.shift.low:+.3f}, "
                                                                f"{eq.shift.high:+.3f}]",
                         f"TOST Holm p (+-{EQUIVALENCE_MARGIN:g})": f"{eq.holm:.3f}"})
            key = "learned" if check.startswith("learned") else "random"
            made.number(macro_name("minatar sens", key, design, "holm"), corrected.holm, "{:.3f}")
            made.number(macro_name("minatar sens", key, design, "poi"), corrected.probability, "{:.2f}")
            made.number(macro_name("minatar sens", key, design, "tost holm"), eq.holm, "{:.3f}")
    if not rows:
        return
    made.number("MinatarSensLearnedGames", len(learned), "{:d}")
    made.number("MinatarSensFloorGames", ", ".join(g for g in games if g not in learned) or "none")
    made.table("minatar_sensitivity", pd.DataFrame(rows),
               f"The MinAtar aggregate's sensitivity on the mean holdout return over checkpoints ({len(seeds)} seeds, "
               f"{seeds[0]}-{seeds[-1]}): first only the games the designs learned (the final return's IQM over every "
               f"design's runs at least {100 * LEARNED_SHARE:.0f}% of the way from the random policy's holdout return "
               "to the anchor; experiments/random_policy.py, the same holdout), returns over the anchor; then every game "
               "with returns normalised from random play up, (return - random) / (anchor - random). The stratified rank "
               f"test's Monte Carlo p ({stats.STRATIFIED_RESAMPLES:,} relabellings within games) and two one-sided tests "
               f"against +-{EQUIVALENCE_MARGIN:g} of the scale, each Holm over the three designs within each check: "
               "sensitivity p's, not verdicts. P(X > Y) and the rank test compare runs within a game, so the second "
               "check can move only the IQM and the shift")

def _per_game(made: FigureData, runs: pd.DataFrame) -> None:
    rows = []
    for game in [g for g in GAMES if g in set(runs["env"])]:
        part = runs[runs["env"] == game]
        base = part[part["design"] == "single_env"]
        for design in [a for a in ARCH_ORDER if a in set(part["design"])]:
            group = part[part["design"] == design]
            row = {"game": game, "design": design, "workers": int(group["num_workers"].iloc[0]), "seeds": len(group)}
            for column in MEASURES:
                row[column] = stats.interval(group[column].dropna())
                if design != "single_env" and len(base):
                    row[f"{column}_vs"] = stats.compare(group[column], base[column])
            rows.append(row)
    tests = [(i, c) for i, r in enumerate(rows) for c in MEASURES if f"{c}_vs" in r]
    for (i, column), corrected in zip(tests, stats.with_holm([rows[i][f"{column}_vs"] for i, column in tests])):
        rows[i][f"{column}_vs"] = corrected
    table = []
    for r in rows:
        line = {"game": r["game"], "design": r["design"] if r["design"] in ("single_env", "high_utd")
                else f"{r['design']} ({r['workers']})", "seeds": r["seeds"]}
        for column, label in MEASURES.items():
            line[f"{label}, IQM [95% CI]"] = ci(*r[column], fmt="{:.1f}")
            name = macro_name("minatar", r["game"], r["design"], "final" if column == "final_holdout_return" else "auc")
            made.number(name, r[column][0], "{:.1f}")
        vs = r.get("holdout_auc_vs")
        line["P(> single_env) on mean holdout [95% CI]"] = (f"{vs.probability:.2f} [{vs.low:.2f}, {vs.high:.2f}]"
                                                            if vs else "-")
        line["Holm p (final; mean)"] = (f"{r['final_holdout_return_vs'].holm:.3f}; {vs.holm:.3f}" if vs else "-")
        table.append(line)
    made.number("MinatarSuiteComparisons", len(tests), "{:d}")
    made.number("MinatarSuiteSmallestHolm", min((rows[i][f"{c}_vs"].holm for i, c in tests), default=float("nan")),
                "{:.3f}")
    made.table("minatar_games", pd.DataFrame(table),
               "MinAtar, every game at 500k env steps with one hyperparameter set (Breakout: the headline's runs), "
               "evaluation seeds from 101, two runs at a time (no speeds): the final and the mean holdout return "
               "over checkpoints, IQM over seeds with 95% stratified-bootstrap intervals; P(design > single_env) "
               f"on the mean holdout return, and the exact rank test's p for both measures after Holm's correction "
               f"over the table's {len(tests)} learning comparisons")


def _aggregate(made: FigureData, runs: pd.DataFrame, games: list[str], seeds: list[int]) -> None:
    scores = {(d, c): matrix(runs, d, games, seeds, c) for d in DESIGNS for c in ("normalised_final", "normalised_auc")}
    rows = []
    for design in DESIGNS:
        for column in ("normalised_final", "normalised_auc"):
            row = {"design": design, "measure": column, "iqm": stats.interval(scores[design, column])}
            if design != "single_env":  # (seeds, games) each: the rank test stratifies over games
                row["vs"] = stats.compare(scores[design, column], scores["single_env", column])
            rows.append(row)
    tested = [r for r in rows if "vs" in r]
    for r, corrected in zip(tested, stats.with_holm([r["vs"] for r in tested])):
        r["vs"] = corrected
    primary = [r for r in tested if r["measure"] == "normalised_auc"]
    # The sensitivity of the family's choice: Holm over the primary measure's comparisons alone.
    for r, corrected in zip(primary, stats.with_holm([r["vs"] for r in primary])):
        r["holm_primary_only"] = corrected.holm
    # The equivalence test of docs/learning-at-scale.md on the primary measure, in shares of each game's
    # anchor (margin 10%), Holm over the designs; applied to these 2-worker runs after they were seen.
    for r, eq in zip(primary, stats.equivalence_with_holm([
            stats.equivalence_test(scores[r["design"], "normalised_auc"], scores["single_env", "normalised_auc"],
                                   EQUIVALENCE_MARGIN, family=len(primary)) for r in primary])):
        r["eq"] = eq
        word = stats.equivalence_verdict(r["vs"], eq)
        for suffix, value, fmt in (("word", word, "{}"), ("shift", 100 * eq.shift.estimate, "{:+.1f}"),
                                   ("shift low", 100 * eq.shift.low, "{:+.1f}"), ("shift high", 100 * eq.shift.high, "{:+.1f}"),
                                   ("tost holm", eq.holm, "{:.3f}"), ("shown", 100 * eq.shown, "{:.1f}"),
                                   ("margin", 100 * EQUIVALENCE_MARGIN, "{:.0f}")):  # shares of the anchor, in %
            made.number(macro_name("minatar agg", r["design"], "auc", suffix), value, fmt)

    table = []
    for r in rows:
        label = "final" if r["measure"] == "normalised_final" else "auc"
        made.number(macro_name("minatar agg", r["design"], label), r["iqm"][0], "{:.2f}")
        made.number(macro_name("minatar agg", r["design"], label, "low"), r["iqm"][1], "{:.2f}")
        made.number(macro_name("minatar agg", r["design"], label, "high"), r["iqm"][2], "{:.2f}")
        line = {"design": r["design"], "measure": MEASURES["final_holdout_return" if label == "final" else "holdout_auc"]
                + " / anchor", "IQM over games x seeds [95% CI]": ci(*r["iqm"], fmt="{:.2f}"),
                "P(> single_env) over game-seed pairs [95% CI]": "-", "stratified rank p": "-", "Holm p": "-",
                "verdict": "-", "Holm p, mean return alone": "-"}
        if "vs" in r:
            vs = r["vs"]
            word = verdict(vs.probability, vs.holm)
            line.update({"P(> single_env) over game-seed pairs [95% CI]": ci(vs.probability, vs.low, vs.high,
                                                                              fmt="{:.2f}"),
                         "stratified rank p": f"{vs.p:.3f}", "Holm p": f"{vs.holm:.3f}", "verdict": word})
            if "holm_primary_only" in r:
                line["Holm p, mean return alone"] = f"{r['holm_primary_only']:.3f}"
                made.number(macro_name("minatar agg", r["design"], label, "holm primary"), r["holm_primary_only"],
                            "{:.3f}")  # a sensitivity p, never a verdict: the report's family holds both measures
            for suffix, value, fmt in (("poi", vs.probability, "{:.2f}"), ("poi low", vs.low, "{:.2f}"),
                                       ("poi high", vs.high, "{:.2f}"), ("p", vs.p, "{:.3f}"),
                                       ("holm", vs.holm, "{:.3f}"), ("verdict", word, "{}")):
                made.number(macro_name("minatar agg", r["design"], label, suffix), value, fmt)
        table.append(line)
    made.number("MinatarAggGames", len(games), "{:d}")
    made.number("MinatarAggWorkers", int(runs.loc[runs["design"] != "single_env", "num_workers"].mode().iloc[0]),
                "{:d}")
    _summary(made, rows)
    made.number("MinatarAggSeeds", len(seeds), "{:d}")
    made.number("MinatarAggComparisons", len(tested), "{:d}")
    made.table("minatar_aggregate", pd.DataFrame(table),
               f"MinAtar across {len(games)} games ({', '.join(games)}) x {len(seeds)} seeds "
               f"({seeds[0]}-{seeds[-1]}): returns divided by each game's anchor (Young & Tian's DQN at 5M frames); "
               "the IQM over every game x seed run with a 95% stratified-bootstrap interval; P(design > single_env) "
               "averaged over games with its interval, and the stratified rank test's Monte Carlo permutation p "
               f"({stats.STRATIFIED_RESAMPLES:,} random relabellings within games, the observed one counted; not exact) "
               f"after Holm's correction over the table's {len(tested)} comparisons; 'told apart' only below 0.05. The "
               "last column, a sensitivity check: Holm over the mean holdout return's comparisons alone (the primary "
               "measure; the family of both measures is the report's; the families written down before their runs are the 8- and 16-worker ones, docs/learning-at-scale.md)")
    top = max(float(np.nanmax(v)) for v in scores.values())
    tau = np.linspace(0.0, max(top, 1e-9), PROFILE_POINTS)
    profile = []
    for design in DESIGNS:
        share, low, high = stats.performance_profile(scores[design, "normalised_final"], tau)
        profile += [{"design": design, "threshold": t, "share": s, "low": lo, "high": hi}
                    for t, s, lo, hi in zip(tau, share, low, high)]
    made.parts.update(aggregate=pd.DataFrame([{"design": r["design"], "measure": r["measure"], "iqm": r["iqm"][0],
                                               "low": r["iqm"][1], "high": r["iqm"][2]} for r in rows]),
                      profile=pd.DataFrame(profile),
                      poi=pd.DataFrame([{"design": r["design"], "measure": r["measure"], "poi": r["vs"].probability,
                                         "low": r["vs"].low, "high": r["vs"].high} for r in tested]))


COUNT_WORDS = {0: "none", 1: "one", 2: "two", 3: "all three"}


def _summary(made: FigureData, rows: list[dict]) -> None:
    """The aggregate's sentence, from the rows: how many parallel designs' final IQMs sit below
    single_env's (MinatarAggBelowFinal) and which comparisons the corrected test tells apart
    (MinatarAggToldApart), so the text cannot outlive the runs (tests/test_suite.py)."""
    final = {r["design"]: r["iqm"][0] for r in rows if r["measure"] == "normalised_final"}
    below = sum(final[d] < final["single_env"] for d in DESIGNS[1:] if d in final)
    made.number("MinatarAggBelowFinal", COUNT_WORDS.get(below, str(below)))
    told = []
    for r in rows:
        word = verdict(r["vs"].probability, r["vs"].holm) if "vs" in r else ""
        if word.startswith("told apart"):
            measure = "final" if r["measure"] == "normalised_final" else "mean"
            told.append(f"{r['design']} on the {measure} return ({word.removeprefix('told apart, ')})")
    made.number("MinatarAggToldApart", "; ".join(told) if told else "none of them")


def _anchors(made: FigureData, runs: pd.DataFrame) -> None:
    """Young & Tian's DQN beside ours, per game, with the budget gap said."""
    budget = int(runs["total_env_steps"].max())
    made.number("MinatarBudgetGap", ANCHOR_FRAMES / budget, "{:.0f}")
    rows = []
    for game in [g for g in GAMES if g in set(runs["env"])]:
        part = runs[runs["env"] == game]
        best = max((d for d in DESIGNS if (part["design"] == d).any()),
                   key=lambda d: stats.iqm(part.loc[part["design"] == d, "final_holdout_return"]))
        mine = part.loc[part["design"] == "single_env", "final_holdout_return"]
        rows.append({"game": game, f"Young & Tian DQN, {ANCHOR_FRAMES / 1e6:.0f}M frames (by eye)": f"{ANCHOR[game]:g}",
                     f"single_env, {budget / 1e3:.0f}k env steps, IQM": f"{stats.iqm(mine):.1f}" if len(mine) else "-",
                     "best design here, IQM": f"{best} {stats.iqm(part.loc[part['design'] == best, 'final_holdout_return']):.1f}"})
        made.number(macro_name("minatar anchor", game), ANCHOR[game], "{:g}")
    made.table("minatar_anchors", pd.DataFrame(rows),
               f"Anchors: Young & Tian's DQN (5M frames, one update per frame, 30 runs, read by eye from their "
               f"curves) beside this suite's final holdout IQM at {budget:,} env steps, {ANCHOR_FRAMES / budget:.0f}x "
               "fewer (MinAtar has no frame skip: a frame is an env step) and a quarter of the updates per step")


def _dots(ax, frame: pd.DataFrame, value: str) -> None:
    """Each design's point and 95% interval on both measures, final (grey squares) above mean (black dots)."""
    for i, (measure, label) in enumerate((("normalised_final", "final holdout return"),
                                          ("normalised_auc", "mean holdout over checkpoints"))):
        part = frame[frame["measure"] == measure].reset_index(drop=True)
        ax.errorbar(part[value], np.arange(len(part)) + (0.15 if i else -0.15), capsize=3, fmt="o" if i else "s",
                    xerr=[part[value] - part["low"], part["high"] - part[value]], color="k" if i else "0.5", label=label)
        ax.set_yticks(np.arange(len(part)))
        ax.set_yticklabels(part["design"], fontsize=8)
    ax.set_ylim(len(part) - 0.5, -0.5)  # the designs top to bottom in ARCH_ORDER, as the tables list them
    ax.legend(fontsize=7, loc="best")


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import PALETTE, plt

    if "aggregate" not in made.parts:  # too few complete games: the tables still build
        return
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    _dots(axes[0], made.parts["aggregate"], "iqm")
    axes[0].set_xlabel("IQM of return / anchor over games x seeds, 95% CI")
    axes[0].set_title(f"Aggregate over {len(made.parts['games'])} games, {len(made.parts['seeds'])} seeds each",
                      fontsize=9)
    for design, sub in made.parts["profile"].groupby("design", sort=False):
        axes[1].plot(sub["threshold"], sub["share"], color=PALETTE[design], label=design)
        axes[1].fill_between(sub["threshold"], sub["low"], sub["high"], color=PALETTE[design], alpha=0.15)
    axes[1].set_xlabel("threshold on final holdout return / anchor")
    axes[1].set_ylabel("share of runs above the threshold")
    axes[1].set_title("Performance profiles, 95% bands", fontsize=9)
    axes[1].legend(fontsize=7)
    _dots(axes[2], made.parts["poi"], "poi")
    axes[2].axvline(0.5, color="k", ls="--", lw=1)
    axes[2].set_xlim(0, 1)
    axes[2].set_xlabel("P(design > single_env) over game-seed pairs, 95% CI")
    axes[2].set_title("Probability of improvement", fontsize=9)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    report.figure(fig, "minatar_suite", made.data)
