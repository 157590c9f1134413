"""The scaling figure: env steps/s once learning starts against workers (median, min-max over seeds)
beside n x single_env and the cost model's prediction, and parallel efficiency below, one column a
setting."""

from __future__ import annotations

import numpy as np

from analysis.report.common import ARCH_ORDER, SPEED, FigureData


def plot(report, made: FigureData) -> None:
    from analysis.report.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, log_axis, plt

    points, columns = made.parts["points"], made.parts["columns"]
    spread = made.parts.get("spread", {})
    fig, axes = plt.subplots(2, len(columns), figsize=(TEXT_WIDTH_IN, 4.6), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [2, 1]})
    for col, column in enumerate(columns):
        env, cost, base, workers, predicted = (column["env"], column["cost"], column["base"], column["workers"],
                                               column["predicted"])
        ax, eff = axes[0][col], axes[1][col]
        for arch in ARCH_ORDER[1:4]:
            sub = points[(points["env"] == env) & (points["env_step_cost_us"] == cost)
                         & (points["architecture"] == arch)]
            if sub.empty:
                continue
            x, y = sub["num_workers"].to_numpy(), sub[SPEED].to_numpy()
            ranges = np.array([spread.get((env, cost, arch, int(n)), (v, v)) for n, v in zip(x, y)])
            ax.errorbar(x, y, yerr=[y - ranges[:, 0], ranges[:, 1] - y], marker=MARKERS[arch], ms=3, capsize=2,
                        color=PALETTE[arch], label=arch)
            eff.plot(sub["num_workers"].to_numpy(), sub["parallel_efficiency"].to_numpy(), marker=MARKERS[arch],
                     ms=3, color=PALETTE[arch], label=arch)
            if predicted:
                ax.plot(workers, [predicted[(arch, int(n))] for n in workers], "--", color=PALETTE[arch], lw=1,
                        alpha=0.8)
        if np.isfinite(base):
            ax.plot(workers, workers * base, ":", color="grey", lw=1, label="n x single_env")
            ax.axhline(base, color=PALETTE["single_env"], lw=1, label="single_env")
        if predicted:
            ax.plot([], [], "--", color="grey", lw=1, label="cost model")
        log_axis(ax, "y")
        if col == 0:
            ax.set_ylabel("env steps/s once learning\n(median, min-max)")
        ax.set_title(f"{env}, env step {'free' if not cost else f'{cost / 1000:g} ms busy'}")
        if col == 0:
            ax.legend(ncol=2, loc="upper left")
        eff.axhline(1.0, color="k", ls="--", lw=1)
        if col == 0:
            eff.set_ylabel("efficiency\n(/ n x single_env)")
        eff.set_xlabel("workers")
        eff.set_xticks(workers)
    fig.tight_layout()
    report.figure(fig, "scaling", made.data)
