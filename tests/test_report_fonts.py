"""The report's figures embed TrueType (Type 42) fonts, not Type 3: a Type 3 font in a figure is
a set of drawings, so the paper's figure text neither copies nor searches and blurs when zoomed
in. No LaTeX needed: the rcParams, one figure drawn here, and the committed figure PDFs."""

from __future__ import annotations

import glob
import io
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_plotting_rcparams_embed_truetype_fonts():
    from analysis.report.framework.plotting import matplotlib

    assert matplotlib.rcParams["pdf.fonttype"] == 42
    assert matplotlib.rcParams["ps.fonttype"] == 42


def test_a_figure_drawn_by_the_report_has_no_type3_font():
    from analysis.report.framework.plotting import plt

    fig, ax = plt.subplots()
    ax.set_xlabel("1-3 runs, min-max, fi ffl")
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="pdf")
    finally:
        plt.close(fig)
    assert b"/Type3" not in buffer.getvalue()
    assert b"/CIDFontType2" in buffer.getvalue()  # the text is there, as a TrueType font


def test_the_committed_figures_have_no_type3_font():
    figures = glob.glob(os.path.join(ROOT, "paper", "figures", "*.pdf"))
    assert figures
    type3 = sorted(os.path.basename(p) for p in figures if b"/Type3" in open(p, "rb").read())
    assert type3 == [], f"figures with Type 3 fonts: {type3}; regenerate with `make -C paper figures`"
