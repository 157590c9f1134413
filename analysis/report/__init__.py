"""Stored runs -> every figure, table and number of the writeup in `paper/`.

    python -m analysis.report [--runs DIR_OR_MONGO_URL ...] [--out paper]

Reads stored Sacred runs only (analysis/load.py). Writes, under --out:
  figures/<name>.pdf|.png|.csv   one figure per question, with the data behind it
  tables/<name>.tex|.md|.csv     throughput and returns with 95% intervals
  generated/numbers.tex          every number the text quotes, as LaTeX macros
  index.html                     all of it on one page that opens from disk (page.py)
A figure whose runs are missing is skipped with one line saying which sweep produces them; a
run that cannot be used is named and left out; everything else still builds. All intervals are
seeded stratified-bootstrap intervals (analysis/stats.py), so a rebuild gives identical CSVs.

One module per figure family (threads, scaling, learning, improvement, headline_tables, breakdown,
utd, hogwild, uneven, shape, per_hour, suite, pqn), each with a data function (runs in, a
FigureData of frames, tables and numbers out, no matplotlib: the tests call them alone) and a
plotting function that draws it; common.py holds the Report and
the shared helpers, claims.py what every verdict rests on (the solved line, the test's level, the
word), plotting.py the only module-level matplotlib import.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from analysis.load import NoRunsError, load_runs
from analysis.report import (
    breakdown,
    headline_tables,
    hogwild,
    improvement,
    learning,
    page,  # index.html: the report as one page
    per_hour,
    pqn,
    scaling,
    shape,
    suite,
    threads,
    uneven,
    utd,
    vector_check,
)
from analysis.report.common import (
    ARCH_ORDER,
    DEDICATED_SWEEPS,
    DEFAULT_RUNS,
    FLOAT_FORMAT,
    TIMING_EXPERIMENT,
    FigureData,
    Report,
    macro_name,
)

__all__ = ["ARCH_ORDER", "DEDICATED_SWEEPS", "DEFAULT_RUNS", "FIGURES", "FLOAT_FORMAT", "PALETTE",
           "TIMING_EXPERIMENT", "FigureData", "Report", "build", "macro_name", "main"]

FIGURES = [("figure_threads", threads.data, threads.plot),
           ("figure_scaling", scaling.data, scaling.plot),
           ("figure_learning_curves", learning.curves_data, learning.plot_curves),
           ("figure_speed_quality", learning.speed_quality_data, learning.plot_speed_quality),
           ("figure_time_breakdown", breakdown.time_data, breakdown.plot_time),
           ("figure_lag_shares", breakdown.lag_data, breakdown.plot_lag),
           ("figure_utd", utd.data, utd.plot),
           ("figure_utd_long", utd.long_data, utd.plot_long),
           ("figure_hogwild", hogwild.data, hogwild.plot),
           ("figure_uneven", uneven.data, uneven.plot),
           ("figure_improvement", improvement.data, improvement.plot),
           ("table_stability", headline_tables.stability_data, None),
           ("table_hyperparameters", headline_tables.hyperparameters_data, None),
           ("figure_practitioner_shape", shape.data, shape.plot),
           ("figure_practitioner_shape_check", shape.check_data, shape.plot),
           ("figure_practitioner_shape_confirm", shape.confirm_data, shape.plot),
           ("figure_per_hour", per_hour.data, per_hour.plot),
           ("figure_minatar_suite", suite.data, suite.plot),
           ("table_pqn_cartpole", pqn.data, None),
           ("table_pqn_speed_check", pqn.speed_check_data, None),
           ("table_pqn_side_by_side", pqn.side_by_side_data, None),
           ("table_vector_check", vector_check.data, None)]
"""(name in a failure's note, data function, plotting function), in the order they are built."""


def __getattr__(name: str):
    """PALETTE needs seaborn: loaded on first use, so importing this package (and so any data
    module) does not pull in matplotlib."""
    if name == "PALETTE":
        from analysis.report.plotting import PALETTE

        return PALETTE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(sources: list[str], out: str, cache_dir: str | None = None) -> Report:
    from analysis.report.plotting import plt

    runset = load_runs(sources, cache_dir=cache_dir)
    report = Report(out)
    for problem in runset.problems:
        report.note(problem)
    runs = runset.runs
    report.number("RunsTotal", len(runs), "{}")
    report.number("CpuModel", str(runs["cpu_model"].mode().iloc[0]) if runs["cpu_model"].notna().any() else "unknown")
    report.number("CpuCount", str(int(runs["cpu_count"].mode().iloc[0])) if runs["cpu_count"].notna().any() else "?")
    for name, data, plot in FIGURES:
        np.random.seed(0)  # seaborn's strip-plot jitter: the same figure on every rebuild
        try:
            made = data(runset, report.note)
            if made is not None:
                if plot is not None:  # a table family has no figure
                    plot(report, made)
                report.write(made)
        except Exception as err:  # noqa: BLE001 - one broken figure must not stop the others
            report.note(f"{name}: failed ({type(err).__name__}: {err}); the other figures still build")
            plt.close("all")
    report.write_macros()
    page.write(report, runset, sources, out)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", default=[DEFAULT_RUNS],
                        help="FileStorage folders (searched recursively) or mongodb:// URLs (default: %(default)s)")
    parser.add_argument("--out", default="paper", help="where figures/, tables/ and generated/ go (default: paper)")
    parser.add_argument("--cache", default=os.path.join("results", ".cache"),
                        help="cache of loaded runs, keyed by the stored files' size and mtime ('' disables)")
    args = parser.parse_args(argv)
    try:
        report = build(args.runs, args.out, args.cache or None)
    except NoRunsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report: wrote {len(report.written)} figures and tables and {len(report.macros)} numbers under "
          f"{args.out}/ ({len(report.notes)} notes above)")
    print(f"report: open {os.path.join(args.out, page.PAGE)} (figures, tables, runs and notes on one page)")
    return 0
