"""9. The probability of improvement over single_env, per env and design, on the headline runs:
P(X > Y) with its interval beside the exact rank test, Holm-corrected over one env's table of one
question (learning, or speed), and the verdict word that test can carry."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.learning import at_scale
from analysis.report.framework.claims import ALPHA, P_FORMAT, macro_measure, verdict
from analysis.report.framework.common import ARCH_ORDER, FigureData, Note, macro_name, runs_read
from analysis.report.framework.selection import SPEED
from analysis.report.learning.curves import headline_rows, slug, measured_speeds

# ---------------------------------------------------------------------- 9. probability of improvement
IMPROVEMENT_METRICS = ["final_holdout_return", "holdout_auc", SPEED]


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = headline_rows(rs)
    if runs.empty or "single_env" not in set(runs["design"]):
        note("probability of improvement: needs `architectures` sweep runs including single_env")
        return None
    rows, samples = [], {}
    for env, part in runs.groupby("env", sort=True):
        base = part[part["design"] == "single_env"]
        for arch in ARCH_ORDER[1:]:
            other = part[part["design"] == arch]
            if other.empty:
                continue
            for metric in IMPROVEMENT_METRICS:
                if metric == SPEED:  # measured alone: these runs' own or the scaling sweep's
                    mine, theirs = measured_speeds(rs, other)[0], measured_speeds(rs, base)[0]
                else:
                    mine, theirs = other[metric].dropna().to_numpy(), base[metric].dropna().to_numpy()
                if not (len(mine) and len(theirs)):  # a design with no speed measured alone
                    continue
                vs = stats.compare(mine, theirs)
                samples[len(rows)] = (mine, theirs)
                rows.append({"env": env, "design": arch, "metric": metric, "seeds": len(mine),
                             "baseline_seeds": len(theirs), "probability": vs.probability, "low": vs.low,
                             "high": vs.high, "rank_p": vs.p})
    if not rows:
        note("probability of improvement: no design besides single_env to compare")
        return None
    data = pd.DataFrame(rows)
    # Holm over the comparisons one env's table makes of one question (every design against
    # single_env on the two learning measures; apart, on speed): a verdict word is no stronger
    # than its corrected test.
    data["family"] = np.where(data["metric"] == SPEED, "speed", "learning")
    data["holm_p"] = np.nan
    for _, part in data.groupby(["env", "family"]):
        data.loc[part.index, "holm_p"] = stats.holm(part["rank_p"].to_numpy())
    data["verdict"] = [verdict(r.probability, r.holm_p) for r in data.itertuples()]
    # The sensitivity of that family's choice: Holm over the primary measure's comparisons alone (the final
    # return, at its cap on CartPole, shares the family above and can only make its correction stricter).
    data["holm_primary_only"] = np.nan
    for _, part in data[data["metric"] == "holdout_auc"].groupby("env"):
        data.loc[part.index, "holm_primary_only"] = stats.holm(part["rank_p"].to_numpy())
    _equivalence(data, samples)
    made = FigureData(data)
    for r in data.itertuples():
        measure = macro_measure(r.metric)  # the speed's macros keep their EnvStepsPerSec names
        made.number(macro_name("poi", r.env, r.design, measure), r.probability, "{:.2f}")
        for side in ("low", "high"):
            made.number(macro_name("poi", r.env, r.design, measure, side), getattr(r, side), "{:.2f}")
        made.number(macro_name("poi", r.env, r.design, measure, "p"), r.rank_p, P_FORMAT)
        made.number(macro_name("poi", r.env, r.design, measure, "holm"), r.holm_p, P_FORMAT)
        made.number(macro_name("poi", r.env, r.design, measure, "verdict"), r.verdict)
        if r.metric == "holdout_auc":  # a sensitivity p, never a verdict: the report's family holds both measures
            made.number(macro_name("poi", r.env, r.design, measure, "holm primary"), r.holm_primary_only, P_FORMAT)
        if r.word:  # the equivalence test's verdict and shift (docs/learning-at-scale.md's rule)
            for suffix, value in (("word", r.word), ("shift", r.shift), ("shift low", r.shift_low),
                                  ("shift high", r.shift_high), ("margin", r.margin), ("shown", r.shown)):
                made.number(macro_name("poi", r.env, r.design, measure, suffix), value,
                            "{}" if suffix == "word" else "{:+.1f}" if suffix.startswith("shift") else "{:.1f}")
    for env, part in data[data["family"] == "learning"].groupby("env", sort=True):
        # how many learning comparisons Holm corrects over, and how wide the intervals on the mean
        # holdout return are (the measure a return cap does not squeeze; the median half width over
        # the designs): what these seeds can resolve
        made.number(macro_name("poi", env, "learning comparisons"), len(part), "{:d}")
        parallel = runs[(runs["env"] == env) & (runs["design"] != "single_env")
                        & (runs["design"] != "high_utd")]["num_workers"]
        if len(parallel):
            made.number(macro_name("poi", env, "workers"), int(parallel.mode().iloc[0]), "{:d}")
        auc = part[part["metric"] == "holdout_auc"]
        made.number(macro_name("poi", env, "holdout_auc", "half width"),
                    float(np.median((auc["high"] - auc["low"]) / 2)), "{:.2f}")
    labels = {"final_holdout_return": "final holdout return", "holdout_auc": "mean holdout return",
              SPEED: "env steps/s once learning"}
    for env, part in data[data["family"] == "learning"].groupby("env", sort=True):
        table = pd.DataFrame({
            "design": part["design"], "measure": part["metric"].map(labels),
            "seeds (design / single_env)": [f"{a} / {b}" for a, b in zip(part["seeds"], part["baseline_seeds"])],
            "P(design > single_env) [95% CI]": [_probability(r) for r in part.itertuples()],
            "rank test p": part["rank_p"].map(P_FORMAT.format),
            "Holm p": part["holm_p"].map(P_FORMAT.format), "verdict": part["verdict"],
            "Holm p, mean return alone": [P_FORMAT.format(h) if np.isfinite(h) else "-"
                                          for h in part["holm_primary_only"]]})
        made.table(f"improvement_{slug(env)}", table,
                   f"{env} ({runs_read(runs[runs['env'] == env])}): each design against single_env, the probability that one of its runs beats a single_env "
                   "run with its percentile-bootstrap 95% interval, the exact two-sided rank test's p, and that p "
                   f"after Holm's correction over the {int((part['family'] == 'learning').sum())} learning "
                   f"comparisons of this table (the family 'learning per env step, {env}'); speed is not "
                   f"compared here (2-3 runs a side cannot be told apart: the `speed` sweep does it); the verdict "
                   f"is 'told apart' only where the corrected p is below {ALPHA}. The last column, a sensitivity "
                   "check: Holm over the mean holdout return's comparisons alone (the primary measure; the family "
                   "above, both measures, is the report's; the families written down before their runs are the 8- and 16-worker ones, docs/learning-at-scale.md)")
    made.parts["read"] = f"{runs_read(runs)}; speeds from runs made alone, as speed_quality's"
    return made


def _equivalence(data: pd.DataFrame, samples: dict) -> None:
    """On the mean holdout return of an env with a fixed return scale (at_scale.SCALES: CartPole's cap),
    the equivalence test of docs/learning-at-scale.md (margin 10% of the scale, Holm over the env's
    designs) and the four-word verdict; applied to these 2-worker runs after they were seen."""
    for column in ("shift", "shift_low", "shift_high", "margin", "tost_p", "tost_holm", "shown"):
        data[column] = np.nan
    data["word"] = ""
    for env, part in data[data["metric"] == "holdout_auc"].groupby("env"):
        if env not in at_scale.SCALES:
            continue
        margin = at_scale.MARGIN * at_scale.SCALES[env]
        tests = stats.equivalence_with_holm([stats.equivalence_test(*samples[i], margin, family=len(part), alpha=ALPHA)
                                             for i in part.index])
        for i, eq in zip(part.index, tests):
            rank = stats.Comparison(data.at[i, "probability"], data.at[i, "low"], data.at[i, "high"],
                                    data.at[i, "rank_p"], data.at[i, "holm_p"])
            data.loc[i, ["shift", "shift_low", "shift_high", "margin", "tost_p", "tost_holm", "shown"]] = [
                eq.shift.estimate, eq.shift.low, eq.shift.high, margin, eq.p, eq.holm, eq.shown]
            data.at[i, "word"] = stats.equivalence_verdict(rank, eq, alpha=ALPHA)


def _probability(r) -> str:
    """P(design > single_env) with its interval, or, where the runs are too few for one (a run of
    each), the estimate and why it has none: never `[nan, nan]`."""
    if np.isfinite(r.low) and np.isfinite(r.high):
        return f"{r.probability:.2f} [{r.low:.2f}, {r.high:.2f}]"
    return f"{r.probability:.2f} (no interval: {r.seeds} / {r.baseline_seeds} runs, too few)"


def plot(report, made: FigureData) -> None:
    """Learning only, one colour a design, each row labelled in its own panel (a shared y axis once
    labelled one panel's rows with another's), its Holm p beside it. Speed is not drawn: at 3 runs a
    side no speed comparison can be told apart, and a [1, 1] interval would look decisive."""
    from analysis.report.framework.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, plt

    data = made.data[made.data["family"] == "learning"]
    metrics = [m for m in IMPROVEMENT_METRICS if m != SPEED]
    rows = data[["env", "design"]].drop_duplicates().reset_index(drop=True)
    fig, axes = plt.subplots(1, len(metrics), figsize=(TEXT_WIDTH_IN, 0.26 * len(rows) + 1.0), squeeze=False)
    labels = {"final_holdout_return": "final holdout return", "holdout_auc": "mean holdout return over checkpoints"}
    for ax, metric in zip(axes[0], metrics):
        for y, (env, arch) in enumerate(rows.itertuples(index=False)):
            hit = data[(data["metric"] == metric) & (data["env"] == env) & (data["design"] == arch)]
            if hit.empty:
                continue
            r = hit.iloc[0]
            low, high = (r["low"], r["high"]) if np.isfinite(r["low"]) else (r["probability"], r["probability"])
            ax.errorbar([r["probability"]], [y], xerr=[[r["probability"] - low], [high - r["probability"]]],
                        fmt=MARKERS.get(arch, "o"), color=PALETTE.get(arch, "grey"), capsize=2, ms=4)
            ax.annotate(f"Holm {r['holm_p']:.2f}", (1.0, y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7, annotation_clip=False)
        ax.axvline(0.5, color="k", ls="--", lw=0.8)
        ax.set_xlim(0, 1)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{env}: {arch}" for env, arch in rows.itertuples(index=False)])
        ax.set_xlabel(f"P(design > single_env) on {labels[metric]}")
    fig.tight_layout()
    report.figure(fig, "improvement", made.data, read=made.parts.get("read", ""))  # the CSV keeps speed
