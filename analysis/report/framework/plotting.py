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

from analysis.report.framework.common import ARCH_ORDER  # noqa: E402

__all__ = ["MARKERS", "PALETTE", "TEXT_WIDTH_IN", "matplotlib", "plt", "sns", "log_axis", "_component_colors",
           "component_group"]

TEXT_WIDTH_IN = 6.8
"""The paper's text width in inches: a figure drawn this wide prints at its own type size (>= 7 pt)."""
matplotlib.rcParams.update({"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
                            "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7,
                            "figure.titlesize": 8,
                            # TrueType (Type 42) fonts in the PDFs, not Type 3: a figure's text copies and
                            # searches in the paper and stays sharp at any zoom
                            "pdf.fonttype": 42, "ps.fonttype": 42})

_OKABE_ITO = {"single_env": "#000000", "actor_learner": "#E69F00", "vector_env": "#009E73", "hogwild": "#0072B2",
              "high_utd": "#CC79A7", "pqn": "#7F7F7F"}
"""One hue a design (Okabe-Ito, one orange only), and a marker each so hue is never the only cue."""
PALETTE = {arch: _OKABE_ITO.get(arch, "#56B4E9") for arch in ARCH_ORDER}
MARKERS = dict(zip(ARCH_ORDER, ["o", "s", "^", "D", "v", "P", "X", "*"]))


def log_axis(ax, which: str) -> None:
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


_GROUPS = {"act": "act", "env_step": "env", "env_wait": "env", "env_reset": "env", "update": "learn",
           "gradient": "learn", "apply": "learn", "targets": "learn", "sample": "replay", "replay_add": "replay",
           "n_step": "replay", "handoff": "hand-off", "handoff_drain": "hand-off", "weight_publish": "weights",
           "weight_sync": "weights", "diagnostics": "other", "wait": "wait"}
"""The breakdown's components in eight groups: a legend of eight colours can be read at print size."""
GROUP_COLORS = {"act": "#56B4E9", "env": "#009E73", "learn": "#D55E00", "replay": "#CC79A7", "hand-off": "#E69F00",
                 "weights": "#0072B2", "other": "#F0E442", "wait": "#d9d9d9"}


def component_group(component: str) -> str:
    return _GROUPS.get(component, "other")


def _component_colors(components: list[str]) -> dict:
    """Fixed colours for the component groups (work in strong colours, waiting in grey)."""
    return {c: GROUP_COLORS[component_group(c)] for c in components}
