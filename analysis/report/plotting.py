"""The only module of the report that imports matplotlib and seaborn at load time: the Agg
backend (no display on the machines that rebuild the paper), the architectures' colours and the
drawing helpers the families share. The families import it inside their plotting functions, so
their data functions load without it."""

from __future__ import annotations

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import seaborn as sns  # noqa: E402

from analysis.report.common import ARCH_ORDER  # noqa: E402

__all__ = ["PALETTE", "matplotlib", "plt", "sns", "_log_axis", "_component_colors"]

PALETTE = dict(zip(ARCH_ORDER, sns.color_palette("colorblind", len(ARCH_ORDER))))


def _log_axis(ax, which: str) -> None:
    """A log axis labelled in plain numbers, minor ticks included (a 2-decade range has few majors)."""
    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.FuncFormatter(_minor_label))
    ax.tick_params(axis=which, which="both", labelsize=7)


def _minor_label(value: float, _position) -> str:
    """A log axis's minor tick in plain numbers (0.6, not 6e-01), at 2, 3, 4 and 6 x a power of ten."""
    if value <= 0:
        return ""
    mantissa = value / 10 ** np.floor(np.log10(value))
    return f"{value:g}" if any(abs(mantissa - m) < 1e-6 for m in (2, 3, 4, 6)) else ""


_COMPONENT_COLORS = {"act": "#1f77b4", "env_step": "#2ca02c", "env_wait": "#98df8a", "env_reset": "#bcbd22",
                     "update": "#d62728", "gradient": "#d62728", "apply": "#ff9896", "sample": "#9467bd",
                     "replay_add": "#c5b0d5", "handoff": "#ff7f0e", "handoff_drain": "#ffbb78",
                     "n_step": "#8c564b", "diagnostics": "#e377c2", "weight_publish": "#17becf",
                     "weight_sync": "#9edae5", "wait": "#d9d9d9"}


def _component_colors(components: list[str]) -> dict:
    """Fixed colours for the known components (work in strong colours, waiting in grey)."""
    spare = iter(sns.color_palette("dark", len(components)))
    return {c: _COMPONENT_COLORS.get(c) or next(spare) for c in components}
