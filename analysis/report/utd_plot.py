"""The utd figures: the grid's heatmaps (return early and late, divergence; with colorbars) and the
long cells' curves, one panel a cell, in the designs' own colours."""

from __future__ import annotations

from analysis import stats
from analysis.report.claims import SOLVED_AT
from analysis.report.common import FigureData


def plot(report, made: FigureData) -> None:
    from analysis.report.plotting import TEXT_WIDTH_IN, plt, sns

    data, single = made.data, made.parts["single"]
    fig, axes = plt.subplots(1, 3, figsize=(TEXT_WIDTH_IN, 2.9))
    seeds = f"{data['seeds'].min()}" if data["seeds"].nunique() == 1 else f"{data['seeds'].min()}-{data['seeds'].max()}"
    for ax, (column, title, fmt) in zip(axes, [
            ("return_25k_iqm", f"return at 25k env steps\n(IQM, {seeds} seeds)", ".0f"),
            ("final_iqm", f"return at 50k env steps\n(IQM, {seeds} seeds)", ".0f"),
            ("divergence_rate", "runs diverged\n(|Q| > 10 max|r|/(1-gamma))", "")]):
        pivot = data.pivot(index="utd", columns="mitigation", values=column)
        pivot.index = [f"{u:g}" for u in pivot.index]  # 1, 4, 16: not 1.0, 4.0, 16.0
        annot = True
        if column == "divergence_rate":  # counts, not a fraction of a few seeds (1/3, not 0.33)
            counts = data.pivot(index="utd", columns="mitigation", values="diverged_runs")
            runs = data.pivot(index="utd", columns="mitigation", values="seeds")
            annot = (counts.astype(int).astype(str) + "/" + runs.astype(int).astype(str)).to_numpy()
        sns.heatmap(pivot, annot=annot, fmt=fmt, ax=ax, cmap="viridis" if column != "divergence_rate" else "rocket_r",
                    vmin=0, vmax=500 if column != "divergence_rate" else 1, annot_kws={"fontsize": 7},
                    cbar_kws={"label": "holdout return" if column != "divergence_rate" else "share of seeds",
                              "shrink": 0.8})
        ax.set_title(title)
        ax.set_ylabel("utd (updates per env step)")
        ax.set_xlabel("mitigation")
    if not single.empty:
        fig.suptitle(f"single_env (utd {single['utd'].iloc[0]:g}) at the same checkpoints: final IQM "
                     f"{stats.iqm(single['final_holdout_return']):.0f} over {len(single)} seeds", y=1.0)
    fig.tight_layout()
    report.figure(fig, "utd_grid", data)


def plot_long(report, made: FigureData) -> None:
    from analysis.report.plotting import PALETTE, TEXT_WIDTH_IN, plt

    LONG_CELLS = made.parts["names"]  # utd's long cells, handed over (importing utd back would be a cycle)
    curves = made.data
    cells = [c for c in LONG_CELLS if c in set(curves["cell"])]
    # the designs' own colours (high_utd's for every high_utd cell: the panels name the resets)
    colours = {c: PALETTE["single_env" if c.startswith("single") else "high_utd"] for c in LONG_CELLS}
    fig, axes = plt.subplots(1, len(cells), figsize=(TEXT_WIDTH_IN, 2.3), sharey=True, squeeze=False)
    for ax, cell in zip(axes[0], cells):
        part = curves[curves["cell"] == cell]
        for _, seed in part.groupby("seed"):
            ax.plot(seed["env_step"] / 1000, seed["return_mean"], color=colours[cell], alpha=0.35, linewidth=0.8)
        median = part.groupby("env_step")["return_mean"].median()
        ax.plot(median.index / 1000, median.to_numpy(), color=colours[cell], linewidth=2.2)
        ax.axhline(SOLVED_AT["CartPole"], color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(f"{LONG_CELLS[cell]}\n({part['seed'].nunique()} seeds)")
        ax.set_xlabel("env steps (thousands)")
    axes[0][0].set_ylabel("holdout return")
    fig.tight_layout()
    report.figure(fig, "utd_long", curves)
