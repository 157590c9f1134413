"""The headline's figures: learning curves against env steps, and speed against quality."""

from __future__ import annotations

from analysis.report.common import ARCH_ORDER, FigureData


def plot_curves(report, made: FigureData) -> None:
    """Return against env steps, one panel an env, a marker and a colour a design. The synthetic
    clock (env steps over a speed measured elsewhere) is left to the CSV: no run timed it."""
    from analysis.report.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, plt

    data = made.data
    envs = sorted(data["env"].unique())
    fig, axes = plt.subplots(1, len(envs), figsize=(TEXT_WIDTH_IN, 2.6), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for arch in ARCH_ORDER:
            sub = data[(data["env"] == env) & (data["architecture"] == arch)].dropna(subset=["env_step"])
            if sub.empty:
                continue
            ax.plot(sub["env_step"], sub["return_iqm"], color=PALETTE[arch], label=arch, marker=MARKERS[arch], ms=3)
            ax.fill_between(sub["env_step"], sub["return_low"], sub["return_high"], color=PALETTE[arch], alpha=0.15)
        ax.set_xlabel("env steps")
        ax.set_ylabel("holdout return (IQM, 95% CI)")
        ax.set_title(env)
        ax.legend(ncol=2)
    fig.tight_layout()
    report.figure(fig, "learning_curves", data, read=made.parts.get("read", ""))


def plot_speed_quality(report, made: FigureData) -> None:
    from analysis.report.plotting import PALETTE, log_axis, plt

    data = made.data
    envs = sorted(data["env"].unique())
    fig, axes = plt.subplots(1, len(envs), figsize=(3.4 * len(envs), 2.8), squeeze=False)
    for ax, env in zip(axes[0], envs):
        part = data[(data["env"] == env) & data["steps_per_sec_median"].notna()]  # no speed alone: no point
        for _, r in part.iterrows():
            ax.errorbar(r["steps_per_sec_median"], r["auc_iqm"],
                        xerr=[[r["steps_per_sec_median"] - r["steps_per_sec_low"]],
                              [r["steps_per_sec_high"] - r["steps_per_sec_median"]]],
                        yerr=[[r["auc_iqm"] - r["auc_low"]], [r["auc_high"] - r["auc_iqm"]]],
                        fmt="o", capsize=3, color=PALETTE.get(r["architecture"]), label=r["label"])
        frontier = part[part["non_dominated"]].sort_values("steps_per_sec_median")
        ax.plot(frontier["steps_per_sec_median"], frontier["auc_iqm"], "k--", lw=1,
                label="frontier of the point estimates (not a test)")
        log_axis(ax, "x")
        ax.set_xlabel("env steps/s (median over seeds, 95% CI; log scale)")
        ax.set_ylabel("mean holdout return over checkpoints\n(IQM over seeds, 95% CI)")
        ax.set_title(env)
        ax.legend()
    report.figure(fig, "speed_quality", data, read=made.parts.get("read", ""))
