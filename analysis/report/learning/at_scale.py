"""Learning at the practitioner's scale: does the 8- or 16-worker run learn as well per env
step as single_env? The families, the primary measure and the verdict rule are docs/learning-at-scale.md's,
written before the runs; this module applies them and nothing else.

Reads the `scale_cartpole` sweep (CartPole, 8 and 16 workers, 10 seeds) and `scale_minatar` (Breakout,
Freeway, Space Invaders at 16, 5 seeds), both made two at a time (no speeds). Per family: each design
against single_env on the mean holdout return over checkpoints, P(X > Y) [95%], the exact rank test
(stratified over games on MinAtar) and Holm within the family; and what the seeds could have detected.
Beside them, how faithful the emulation is: its policy lag, acting-weight age and worker shares against
the 16-core runs' (sixteen_cores stores)."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import ALPHA, CAP, EQUIVALENCE_MARGIN, SOLVED_AT, verdict
from analysis.report.framework.common import FigureData, Note, ci, diverged, holdout_auc, macro_name, runs_read
from analysis.report.learning.suite import matrix

SWEEPS = ("scale_cartpole", "scale_minatar")
DESIGNS = ("actor_learner", "hogwild", "vector_env", "pqn")
GAMES = ("Breakout", "Freeway", "SpaceInvaders")
PRIMARY = "holdout_auc"
FAMILIES = (("CartPole, 8 workers", "CartPole", 8), ("CartPole, 16 workers", "CartPole", 16),
            ("MinAtar, 16 workers, across games", "MinAtar", 16))
"""The pre-registered families (docs/learning-at-scale.md), each Holm-corrected apart; the per-game
MinAtar family (12 comparisons) is the secondary, descriptive one."""
SCALES = {"CartPole": CAP["CartPole"], "Breakout": 15.4, "Freeway": 55.0, "SpaceInvaders": 34.3}
"""Each env's return scale, fixed before the remaining MinAtar runs were read (docs/learning-at-scale.md,
"Equivalence"): CartPole's episode cap; on MinAtar single_env's median final holdout return at 500k env
steps in the earlier `minatar` (Breakout) and `minatar_suite` sweeps (tests/test_at_scale.py recomputes
them from those stored runs)."""
MINATAR_SEEDS = 5
"""scale_minatar's seeds a cell (101-105), as pre-registered."""
MARGIN = EQUIVALENCE_MARGIN
"""The equivalence margin, a share of the scale: +-50 on CartPole, +-0.10 of each game's scale across games."""
THRESHOLDS = {"CartPole": SOLVED_AT["CartPole"], **{game: 0.8 * SCALES[game] for game in GAMES}}
"""Time to a threshold: gymnasium's reward_threshold where the env has one (CartPole-v1), else 80% of the scale."""


def detectable(n: int, m: int, level: float) -> float:
    """The smallest P(X > Y) that the exact two-sided rank-sum test of n against m runs (no ties) can
    call significant at `level`: what a 'not told apart' could have missed. nan where none can."""
    counts, total = stats.rank_sum_counts(n, m), comb(n + m, n)
    tail = 0
    for u in range(n * m, -1, -1):
        tail += counts[u]
        if 2 * tail / total >= level:
            return (u + 1) / (n * m) if u < n * m else float("nan")
    return float("nan")


def _runs(rs: RunSet, note: Note) -> pd.DataFrame:
    runs = rs.runs[rs.runs["sweep"].isin(SWEEPS)].copy()
    out = runs[diverged(runs)]
    for run_id in out["run_id"]:
        note(f"learning at scale: run {run_id} diverged; left out")
    runs = runs[~diverged(runs)]
    runs[PRIMARY] = holdout_auc(rs.holdout, runs["run_id"])
    runs["family_env"] = np.where(runs["env"] == "CartPole", "CartPole", "MinAtar")
    return runs


def _grids(rs: RunSet, runs: pd.DataFrame, note: Note) -> None:
    """Every run of one env on the same holdout checkpoints, or a note naming the odd ones."""
    points = rs.holdout[rs.holdout["run_id"].isin(runs["run_id"])].groupby("run_id")["env_step"].apply(tuple)
    for env, part in runs.groupby("env"):
        grids = part["run_id"].map(points).dropna()
        if grids.nunique() > 1:
            common = grids.mode().iloc[0]
            odd = [r for r, g in zip(part["run_id"], part["run_id"].map(points)) if g != common]
            note(f"learning at scale: {env}: {len(odd)} run(s) not on the shared holdout grid "
                 f"({', '.join(odd[:3])}); unfinished runs end early")


def _family_rows(runs: pd.DataFrame, family: str, env: str, workers: int) -> list[dict]:
    """One family's comparisons, Holm within it."""
    part = runs[runs["family_env"] == env]
    base = part[part["design"] == "single_env"]
    rows = []
    if env == "CartPole":
        for design in DESIGNS:
            mine = part[(part["design"] == design) & (part["num_workers"] == workers)]
            if len(mine) and len(base):
                x, y = mine[PRIMARY].to_numpy(float), base[PRIMARY].to_numpy(float)
                rows.append({"family": family, "design": design, "workers": workers, "games": "CartPole",
                             "seeds": len(mine), "baseline_seeds": len(base), "vs": stats.compare(x, y),
                             "eq": stats.equivalence_test(x, y, MARGIN * SCALES["CartPole"], family=len(DESIGNS),
                                                          alpha=ALPHA),
                             "margin": MARGIN * SCALES["CartPole"], "unit": "",
                             "detectable": detectable(len(mine), len(base), ALPHA / len(DESIGNS))})
    else:
        for design in DESIGNS:
            mine = part[(part["design"] == design) & (part["num_workers"] == workers)]
            games = [g for g in GAMES if (mine["env"] == g).any() and (base["env"] == g).any()]
            seeds = sorted(set(mine["seed"]) & set(base["seed"]))
            games = [g for g in games if set(seeds) <= set(mine.loc[mine["env"] == g, "seed"])
                     and set(seeds) <= set(base.loc[base["env"] == g, "seed"])]
            if not games or len(seeds) < 2:
                continue
            x, y = matrix(mine, design, games, seeds, PRIMARY), matrix(base, "single_env", games, seeds, PRIMARY)
            rows.append({"family": family, "design": design, "workers": workers, "games": ", ".join(games),
                         "seeds": len(seeds), "baseline_seeds": len(seeds), "vs": stats.compare(x, y),
                         "eq": stats.equivalence_test(x, y, MARGIN, scales=[SCALES[g] for g in games],
                                                      family=len(DESIGNS), alpha=ALPHA),
                         "margin": MARGIN, "unit": " of the scale", "detectable": float("nan")})
    return _corrected(rows)


def _corrected(rows: list[dict]) -> list[dict]:
    """Holm within one family, for the rank tests and, apart, for the equivalence tests."""
    for row, vs, eq in zip(rows, stats.with_holm([r["vs"] for r in rows]),
                           stats.equivalence_with_holm([r["eq"] for r in rows])):
        row["vs"], row["eq"] = vs, eq
    return rows


def _per_game_rows(runs: pd.DataFrame) -> list[dict]:
    """The secondary MinAtar family: each design on each game at 16, Holm over all of them."""
    part = runs[runs["family_env"] == "MinAtar"]
    rows = []
    for game in GAMES:
        base = part[(part["env"] == game) & (part["design"] == "single_env")]
        for design in DESIGNS:
            mine = part[(part["env"] == game) & (part["design"] == design)]
            if len(mine) and len(base):
                x, y = mine[PRIMARY].to_numpy(float), base[PRIMARY].to_numpy(float)
                k = len(GAMES) * len(DESIGNS)
                rows.append({"family": "MinAtar, 16 workers, per game (secondary)", "design": design,
                             "workers": int(mine["num_workers"].iloc[0]), "games": game, "seeds": len(mine),
                             "baseline_seeds": len(base), "vs": stats.compare(x, y),
                             "eq": stats.equivalence_test(x, y, MARGIN * SCALES[game], family=k, alpha=ALPHA),
                             "margin": MARGIN * SCALES[game], "unit": "",
                             "detectable": detectable(len(mine), len(base), ALPHA / k)})
    return _corrected(rows)


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = _runs(rs, note)
    if runs.empty:
        note("learning at scale: no runs of `scale_cartpole` or `scale_minatar` (docs/learning-at-scale.md has "
             "the commands)")
        return None
    _grids(rs, runs, note)
    rows = [r for family, env, n in FAMILIES for r in _family_rows(runs, family, env, n)] + _per_game_rows(runs)
    if not rows:
        note("learning at scale: runs, but no design beside single_env yet")
        return None
    frame = pd.DataFrame([{k: v for k, v in r.items() if k not in ("vs", "eq")} | {
        "probability": r["vs"].probability, "low": r["vs"].low, "high": r["vs"].high, "p": r["vs"].p,
        "holm": r["vs"].holm, "rank_verdict": verdict(r["vs"].probability, r["vs"].holm),
        "shift": r["eq"].shift.estimate, "shift_low": r["eq"].shift.low, "shift_high": r["eq"].shift.high,
        "coverage": r["eq"].shift.coverage, "tost_p": r["eq"].p, "tost_holm": r["eq"].holm, "shown": r["eq"].shown,
        "word": stats.equivalence_verdict(r["vs"], r["eq"], alpha=ALPHA)} for r in rows])
    frame["verdict"] = [verdict_text(r) for r in frame.itertuples()]
    made = FigureData(frame)
    descriptive = runs.groupby(["env", "design", "num_workers"])
    table = []
    for r in frame.itertuples():
        table.append({"family": r.family, "design (workers)": f"{r.design} ({r.workers})", "games": r.games,
                      "seeds (design / single_env)": f"{r.seeds} / {r.baseline_seeds}",
                      "P(> single_env) on the mean holdout return [95% CI]": ci(r.probability, r.low, r.high,
                                                                                  fmt="{:.2f}"),
                      "rank p": f"{r.p:.3f}", "Holm p": f"{r.holm:.3f}",
                      "shift [90% CI]": f"{_amount(r.shift, r.unit)} [{_amount(r.shift_low, r.unit)}, "
                                        f"{_amount(r.shift_high, r.unit)}]",
                      "margin": f"+-{_amount(r.margin, r.unit)}", "TOST Holm p": f"{r.tost_holm:.3f}",
                      "verdict": r.verdict,
                      "detectable P": "-" if not np.isfinite(r.detectable) else f">= {r.detectable:.2f}"})
        family = r.family.split(",")[0] + (" game" if "per game" in r.family else "")
        where = r.games if "per game" in r.family else ""
        unit = 100.0 if r.unit else 1.0  # across games the macros are percentages of the scale (the text adds \%)
        for suffix, value, fmt in (("poi", r.probability, "{:.2f}"), ("low", r.low, "{:.2f}"), ("high", r.high, "{:.2f}"),
                                   ("holm", r.holm, "{:.3f}"), ("verdict", r.verdict, "{}"), ("word", r.word, "{}"),
                                   ("shift", unit * r.shift, "{:+.1f}"), ("shift low", unit * r.shift_low, "{:+.1f}"),
                                   ("shift high", unit * r.shift_high, "{:+.1f}"), ("tost holm", r.tost_holm, "{:.3f}"),
                                   ("margin", unit * r.margin, "{:.1f}"), ("shown", unit * r.shown, "{:.1f}")):
            made.number(macro_name("scale", family, where, r.design, r.workers, suffix), value, fmt)
    made.table("at_scale_learning", pd.DataFrame(table),
               f"Learning per env step at 8 and 16 workers against single_env ({runs_read(runs)}; evaluation seeds "
               "from 101, two runs at a time, every parallel design's env step waiting 2.2 ms): P(design's mean holdout "
               "return over checkpoints > single_env's) with its 95% interval, the exact rank-sum test (stratified over "
               "games across MinAtar), Holm within each family fixed before the runs (docs/learning-at-scale.md); the "
               "Hodges-Lehmann shift (design minus single_env; across games in shares of each game's scale) with its "
               "exact 90% interval, and two one-sided tests against the margin (10% of the scale), Holm within the "
               f"family. Verdict: 'better'/'worse' where the rank test's Holm p is below {ALPHA}, else 'as well' where "
               "the TOST's is, else 'not settled' with the smallest margin the family's first Holm step could have "
               "shown; 'detectable P': the smallest P(X > Y) that step could have told apart at these seeds")
    summary = []
    for (env, arch, n), group in descriptive:
        summary.append({"env": env, "design (workers)": f"{arch} ({int(n)})", "seeds": len(group),
                        "mean holdout return, IQM [95% CI]": ci(*stats.interval(group[PRIMARY].dropna()), fmt="{:.1f}"),
                        "final holdout return, IQM [95% CI]": ci(*stats.interval(group["final_holdout_return"].dropna()),
                                                                  fmt="{:.1f}")})
    made.table("at_scale_returns", pd.DataFrame(summary),
               f"Holdout returns at scale ({runs_read(runs)}): per env, design and worker count, the mean holdout return "
               "over checkpoints (the primary measure) and the final return, IQM over seeds with 95% stratified-bootstrap "
               "intervals; the final return carries no verdict")
    made.number("ScaleRuns", len(runs), "{:d}")
    made.number("ScaleMinatarRuns", int((runs["sweep"] == "scale_minatar").sum()), "{:d}")
    minatar = runs[runs["sweep"] == "scale_minatar"]  # the fewest seeds of any game and design: what every cell has
    made.number("ScaleMinatarSeeds", int(minatar.groupby(["env", "design"])["seed"].nunique().min())
                if len(minatar) else 0, "{:d}")
    # The study's settings as the text quotes them (docs/learning-at-scale.md), so none is typed by hand.
    cartpole = runs[runs["family_env"] == "CartPole"]
    made.number("ScaleCartPoleSeeds", int(cartpole["seed"].nunique()), "{:d}")
    made.number("ScaleWorkersEight", FAMILIES[0][2], "{:d}")
    made.number("ScaleWorkersSixteen", FAMILIES[1][2], "{:d}")
    made.number("ScaleMinatarGames", len(GAMES), "{:d}")
    made.number("ScaleMinatarPlanned", len(GAMES) * (1 + len(DESIGNS)) * MINATAR_SEEDS, "{:d}")
    made.number("ScaleMarginPercent", 100 * MARGIN, "{:.0f}")
    made.number("ScaleShiftLevel", 100 * (1 - 2 * ALPHA), "{:.0f}")
    waits = runs["config"].map(lambda c: c.get("env_step_wait_us", 0.0))
    made.number("ScaleWaitMs", float(waits[waits > 0].mode().iloc[0]) / 1000 if (waits > 0).any() else float("nan"),
                "{:g}")
    fidelity = fidelity_rows(rs)
    if not fidelity.empty:
        made.table("at_scale_emulation", fidelity,
                   "The emulation beside 16 real cores: per source, design and workers, the median over runs of the "
                   "mean acting-weight age at hand-off (learner updates), of the median policy lag of sampled "
                   "transitions (updates), the range of the workers' shares of env steps and of sampled transitions, "
                   "and hogwild's overlapping writes (the share of updates that overlapped another worker's). The "
                   "16-core runs are the practitioner's shape (batch 32, 12k env steps, busy step); the emulation's "
                   "are the cartpole config (batch 128, 100k env steps, waiting step) on 2 cores")
    return made


def _amount(value: float, unit: str) -> str:
    """A return difference, or a share of the scale ("of the scale" units) as a percentage."""
    if not np.isfinite(value):
        return "unbounded"
    return f"{100 * value:.1f}%" if unit else f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def verdict_words(word: str, margin: str, shown: str) -> str:
    """The four words as every table prints them: 'as well (within +-m)', 'not settled (could show +-m)',
    'worse', 'better' (`margin` and `shown` already written in the table's units)."""
    return {"as well": f"as well (within +-{margin})", "not settled": f"not settled (could show +-{shown})"}.get(word, word)


def verdict_text(row) -> str:
    """A family row's verdict (verdict_words, the amounts in the row's units)."""
    return verdict_words(row.word, _amount(row.margin, row.unit), _amount(row.shown, row.unit))


def _share_range(results: list[dict], kind: str) -> str:
    """The lowest and highest worker share of `kind` over every worker of every run."""
    values = [v for r in results for v in (r.get("worker_shares") or {}).get(kind) or []]
    return f"{min(values):.3f}-{max(values):.3f}" if values else "-"


def fidelity_rows(rs: RunSet) -> pd.DataFrame:
    """Policy lag, acting-weight age, worker shares and hogwild's overlaps: the emulation's runs at 8 and
    16 (scale_cartpole) beside the 16-core machines' runs of the same design and count."""
    runs = rs.runs
    scale = runs[(runs["sweep"] == "scale_cartpole") & (runs["design"] != "single_env")]
    sixteen = runs[runs["sweep"].astype(str).str.startswith("sixteen_cores/")
                   & runs["design"].isin(DESIGNS) & runs["num_workers"].isin([8, 16])]
    rows = []
    for source, frame in (("emulation, 2 cores", scale), ("16 cores", sixteen)):
        for (arch, n), group in frame.groupby(["design", "num_workers"]):
            results = list(group["result"])

            def median(key, stat):
                values = [r[key][stat] for r in results if isinstance(r.get(key), dict) and stat in r[key]]
                return f"{np.median(values):.1f}" if values else "-"

            overlaps = [r["overlap_fraction"] for r in results if r.get("overlap_fraction") is not None]
            rows.append({"source": source, "design (workers)": f"{arch} ({int(n)})", "runs": len(group),
                         "acting-weight age, mean": median("acting_staleness", "mean"),
                         "policy lag, p50": median("policy_lag", "p50"),
                         "env-step shares": _share_range(results, "env_steps"),
                         "sampled shares": _share_range(results, "sampled"),
                         "hogwild overlaps": f"{np.median(overlaps):.3f}" if overlaps else "-"})
    return pd.DataFrame(rows)
