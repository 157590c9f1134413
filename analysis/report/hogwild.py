"""8. hogwild: lock-free against locked shared-weight updates (the `hogwild` sweep): how often
optimizer steps overlapped another worker's write, against the return reached, and throughput."""

from __future__ import annotations

from analysis import stats
from analysis.load import RunSet
from analysis.report.common import FigureData, Note, _arch_label, _sweep, macro_name


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = _sweep(rs.runs, "hogwild").copy()
    if runs.empty:
        note("hogwild: no runs of the `hogwild` sweep; run `python -m experiments.sweep hogwild`")
        return None
    runs["config"] = runs.apply(lambda r: f"hogwild ({'lock' if r['hogwild_lock'] else 'no lock'})"
                                if r["architecture"] == "hogwild" else _arch_label(r), axis=1)
    data = runs[["run_id", "config", "seed", "env_steps_per_sec", "final_holdout_return", "overlap_fraction",
                 "mean_version_gap"]].sort_values(["config", "seed"], ignore_index=True)
    made = FigureData(data)
    for config, group in data.groupby("config"):
        made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "steps"),
                    group["env_steps_per_sec"].median())
        made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "final"),
                    stats.iqm(group["final_holdout_return"]), "{:.1f}")
        made.number(macro_name("hog", config, "worst"), group["final_holdout_return"].min(), "{:.1f}")
        if group["overlap_fraction"].notna().any():
            made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "overlap", "max"),
                        100 * group["overlap_fraction"].max(), "{:.1f}")
            made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "overlap", "min"),
                        100 * group["overlap_fraction"].min(), "{:.1f}")
    made.number("HogSeeds", int(data.groupby("config").size().min()), "{}")
    return made


def plot(report, made: FigureData) -> None:
    from analysis.report.plotting import plt, sns

    data = made.data
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    hog = data[data["config"].str.startswith("hogwild")]
    sns.scatterplot(data=hog, x="overlap_fraction", y="final_holdout_return", hue="config", ax=axes[0])
    axes[0].set_xlabel("optimizer steps that overlapped another worker's write (fraction)")
    axes[0].set_ylabel("final holdout return")
    sns.stripplot(data=data, x="config", y="env_steps_per_sec", ax=axes[1])
    axes[1].set_ylabel("env steps/s")
    axes[2].set_ylabel("final holdout return")
    sns.stripplot(data=data, x="config", y="final_holdout_return", ax=axes[2])
    for ax in axes[1:]:
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    report.figure(fig, "hogwild", data)
