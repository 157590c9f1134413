"""Stored runs -> every figure, table and number of the writeup in `paper/`.

    python -m analysis.report [--runs DIR_OR_MONGO_URL ...] [--out paper]

Reads stored Sacred runs only (analysis/io/load.py). Writes, under --out:
  figures/<name>.pdf|.png|.csv   one figure per question, with the data behind it
  tables/<name>.tex|.md|.csv     throughput and returns with 95% intervals
  generated/numbers.tex          every number the text quotes, as LaTeX macros
  index.html                     all of it on one page that opens from disk (page.py)
A figure whose runs are missing is skipped with one line saying which sweep produces them; a
run that cannot be used is named and left out; everything else still builds. All intervals are
seeded stratified-bootstrap intervals (analysis/stats.py), so a rebuild gives identical CSVs.

Families by the question they answer: speed/ (how fast), learning/ (how well, at equal env steps)
and answer/ (the answer table, learning per second of training, provenance), one module a family,
each with a data function (runs in, a FigureData of frames, tables and numbers out, no matplotlib:
the tests call them alone) and a plotting function that draws it; framework/ holds what they share
(the Report, FigureData, formatting, the only module-level matplotlib import, what every verdict
rests on, the page).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from analysis.io.load import NoRunsError, load_runs
from analysis.report.answer import per_hour, provenance, wall_clock
from analysis.report.answer import table as answer
from analysis.report.framework import claims, page  # page: index.html, the report as one page
from analysis.report.learning import apex, at_scale, headline_tables, improvement, pqn, suite, utd
from analysis.report.learning import curves as learning
from analysis.report.speed import (breakdown, gpu, hogwild, own_wait, plain_learner, scaling, shape, sixteen,
                                   tensorboard_cost, threads, uneven, vector_check)
from analysis.report.framework.common import (
                                              ARCH_ORDER,
                                              DEDICATED_SWEEPS,
                                              DEFAULT_RUNS,
                                              FLOAT_FORMAT,
                                              TIMING_EXPERIMENT,
                                              FigureData,
                                              Report,
                                              ReportWriteFailed,
                                              committed,
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
           ("table_own_wait", own_wait.data, None),
           ("figure_sixteen_cores_shape", sixteen.data, sixteen.plot),
           ("table_gpu", gpu.data, None),
           ("table_plain_learner", plain_learner.data, None),
           ("table_answer", answer.data, None),
           ("table_apex_epsilons", apex.data, None),
           ("figure_per_hour", per_hour.data, per_hour.plot),
           ("figure_minatar_suite", suite.data, suite.plot),
           ("table_pqn_cartpole", pqn.data, None),
           ("table_pqn_speed_check", pqn.speed_check_data, None),
           ("table_pqn_side_by_side", pqn.side_by_side_data, None),
           ("table_vector_check", vector_check.data, None),
           ("table_provenance", provenance.data, None),
           ("table_at_scale", at_scale.data, None),
           ("table_tensorboard_cost", tensorboard_cost.data, None),
           ("table_wall_clock", wall_clock.data, None)]
"""(name in a failure's note, data function, plotting function), in the order they are built."""
ALL_MACHINES = {"figure_sixteen_cores_shape", "table_gpu", "table_answer", "table_provenance", "table_at_scale",
                "table_wall_clock"}
"""The families that read stores made on other machines (analysis/io/load.py MACHINE_FILE); every other
family reads this suite's own machine's runs only."""


def __getattr__(name: str):
    """PALETTE needs seaborn: loaded on first use, so importing this package (and so any data
    module) does not pull in matplotlib."""
    if name == "PALETTE":
        from analysis.report.framework.plotting import PALETTE

        return PALETTE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(sources: list[str], out: str, cache_dir: str | None = None) -> Report:
    """Every figure, table and number of the runs in `sources`, written under `out` whole or not
    at all (common.Report): a write that fails raises ReportWriteFailed and leaves `out` as it was."""
    runset = load_runs(sources, cache_dir=cache_dir)
    report = Report(out)
    try:
        _build(report, runset, sources, out)
        report.commit()  # only a whole report replaces the one in `out`
    except BaseException:
        report.discard()
        raise
    return report


def _build(report: Report, runset, sources: list[str], out: str) -> None:
    from analysis.report.framework.plotting import plt

    for problem in runset.problems:
        report.note(problem)
    local = runset.on_machine("")  # this machine's runs: the stores brought from others are read apart
    runs = local.runs
    report.number("RunsTotal", len(runs), "{}")
    report.number("CpuModel", str(runs["cpu_model"].mode().iloc[0]) if runs["cpu_model"].notna().any() else "unknown")
    report.number("CpuCount", str(int(runs["cpu_count"].mode().iloc[0])) if runs["cpu_count"].notna().any() else "?")
    for name, data, plot in FIGURES:
        np.random.seed(0)  # seaborn's strip-plot jitter: the same figure on every rebuild
        try:
            made = data(runset if name in ALL_MACHINES else local, report.note)
            if made is not None:
                if plot is not None:  # a table family has no figure
                    plot(report, made)
                report.write(made)
        except ReportWriteFailed:  # the disk, not the figure: the first failed write stops the report
            plt.close("all")
            raise
        except Exception as err:  # noqa: BLE001 - one broken figure must not stop the others
            report.note(f"{name}: failed ({type(err).__name__}: {err}); the other figures still build")
            plt.close("all")
    worst = claims.worst_out_of_sample(report.macros)  # across families: the abstract quotes the largest miss
    if worst is not None:
        report.number("ModelWorstMissOutOfSample", worst[0], "{:.0f}")
        report.number("ModelWorstMissTest", worst[1])
    report.write_macros()
    page.write(report, runset, sources, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", default=[DEFAULT_RUNS],
                        help="FileStorage folders (searched recursively) or mongodb:// URLs (default: %(default)s)")
    parser.add_argument("--out", default="paper", help="where figures/, tables/ and generated/ go (default: paper)")
    parser.add_argument("--cache", default=committed("results", ".cache"),
                        help="cache of loaded runs, keyed by the stored files' size and mtime, under the "
                             "checkout's results/ ('' disables)")
    parser.add_argument("--dry-run", action="store_true", help="check that the runs' sources exist, then stop")
    args = parser.parse_args(argv)
    if args.dry_run:
        missing = [s for s in args.runs if not s.startswith(("mongodb://", "mongodb+srv://")) and not os.path.isdir(s)]
        if missing:
            print(f"error: --runs: no folder {', '.join(missing)}", file=sys.stderr)
            return 2
        print(f"report: would read {', '.join(args.runs)} and write under {args.out}/ (dry run: nothing read)")
        return 0
    try:
        report = build(args.runs, args.out, args.cache or None)
    except NoRunsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ReportWriteFailed as err:  # a full disk: one line, and the report there before kept whole
        print(f"error: {err}", file=sys.stderr)
        return 1
    if report.empty_line():
        print(report.empty_line(), file=sys.stderr)
    print(f"report: wrote {len(report.written)} figures and tables and {len(report.macros)} numbers under "
          f"{args.out}/ ({len(report.notes)} notes, on the page)")
    print(f"report: open {os.path.join(args.out, page.PAGE)} (figures, tables, runs and notes on one page)")
    return 0
