"""1. threads: one gradient step's time against torch's intra-op threads, per network and batch
size, from the `threads` sweep's update-timing runs (CPU only)."""

from __future__ import annotations

from analysis.io.load import RunSet
from analysis.report.framework.common import TIMING_EXPERIMENT, FigureData, Note, macro_name


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = rs.runs[(rs.runs["experiment"] == TIMING_EXPERIMENT) & (rs.runs["device"].fillna("cpu") == "cpu")
                   & (rs.runs["sweep"] != "plain_learner")]  # another learner's updates: speed/plain_learner.py
    if runs.empty:
        note("threads: no update-timing runs; run `python -m experiments.sweep threads`")
        return None
    frame = (runs[["network", "batch_size", "torch_threads", "update_us_median", "update_us_p10", "update_us_p90"]]
             .sort_values(["network", "batch_size", "torch_threads"], ignore_index=True))
    made = FigureData(frame)
    for network in sorted(frame["network"].unique()):
        part = frame[(frame["network"] == network) & (frame["batch_size"] == frame["batch_size"].min())]
        one, most = part.iloc[0], part.iloc[-1]
        made.number(macro_name("threads", network, "one", "us"), one["update_us_median"])
        made.number(macro_name("threads", network, "most", "us"), most["update_us_median"])
    made.number("ThreadsMost", int(frame["torch_threads"].max()), "{}")
    # Every batch too: the CartPole headline runs batch 128, where two threads did gain.
    for (network, batch), part in frame.groupby(["network", "batch_size"]):
        one, most = part.iloc[0], part.iloc[-1]
        made.number(macro_name("threads", network, "batch", int(batch), "one", "us"), one["update_us_median"])
        made.number(macro_name("threads", network, "batch", int(batch), "most", "us"), most["update_us_median"])
    made.number("ThreadsRounds", int(runs.groupby(["network", "batch_size", "torch_threads"]).size().min()), "{}")
    return made


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import TEXT_WIDTH_IN, log_axis, plt

    data = made.data
    networks = sorted(data["network"].unique())
    fig, axes = plt.subplots(1, len(networks), figsize=(TEXT_WIDTH_IN, 2.4), squeeze=False)
    for i, (ax, network) in enumerate(zip(axes[0], networks)):
        part = data[data["network"] == network]
        for batch, rows in part.groupby("batch_size"):
            ax.errorbar(rows["torch_threads"], rows["update_us_median"] / 1e3,
                        yerr=[(rows["update_us_median"] - rows["update_us_p10"]) / 1e3,
                              (rows["update_us_p90"] - rows["update_us_median"]) / 1e3],
                        marker="o", capsize=3, label=f"batch {batch}")
        ax.set_title(network)
        ax.set_xlabel("torch intra-op threads")
        ax.set_xticks(sorted(part["torch_threads"].unique()))
        log_axis(ax, "y")
        if i == 0:
            ax.set_ylabel("one gradient step (ms)\nmedian, bars p10-p90")
        ax.legend()
    fig.tight_layout()
    report.figure(fig, "threads", data)
