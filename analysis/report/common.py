"""What every figure family shares: the Report that writes outputs, the formatting of tables and
macros, and the selection of runs. No matplotlib here (see plotting.py), so the families' data
functions, which import this module, can be run and tested without it."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
import sys
import tempfile
import textwrap
from collections import Counter
from typing import Callable

import numpy as np
import pandas as pd

from analysis.load import LEARNING_RATE, TRAINING_EXPERIMENTS
from architectures.registry import NAMES
from experiments.atomic import atomic_write

ARCH_ORDER = list(NAMES)  # the registry's order: tables list designs, and figures colour them, by it
FLOAT_FORMAT = "%.6g"
TIMING_EXPERIMENT = "update_timing"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The checkout this package runs from."""


def committed(*parts: str) -> str:
    """A committed input (results/reference, results/benchmarks), found from the package, never
    from the working directory: the report reads the same files wherever it is run from."""
    return os.path.join(REPO, *parts)


DEFAULT_RUNS = committed("results", "reference")

Note = Callable[[str], None]
"""Where a data function says what it left out (build passes Report.note; tests pass list.append)."""


@dataclasses.dataclass
class FigureData:
    """What a family's data function hands its plotting function: `data`, the frame behind the
    figure (written as its CSV), the tables and numbers the text quotes from it, in the order
    they were made, and in `parts` whatever else the drawing needs. Built without matplotlib."""

    data: pd.DataFrame
    tables: list[tuple[str, pd.DataFrame, str]] = dataclasses.field(default_factory=list)
    numbers: list[tuple[str, object, str]] = dataclasses.field(default_factory=list)
    parts: dict = dataclasses.field(default_factory=dict)

    def table(self, name: str, frame: pd.DataFrame, caption: str) -> None:
        self.tables.append((name, frame, caption))

    def number(self, name: str, value, fmt: str = "{:,.0f}") -> None:
        self.numbers.append((name, value, fmt))


class ReportWriteFailed(RuntimeError):
    """A file of the report could not be written: the report stops there, its new files are
    removed and the report already in the folder is kept whole (Report.commit)."""

    def __init__(self, out: str, name: str, err: OSError):
        reason = err.strerror or f"{type(err).__name__}: {err}"
        super().__init__(f"the report in {out!r} could not be written ({reason}, at {name}); nothing of this "
                         f"build was kept and the report there before is as it was")


class Report:
    """Collects outputs, notes and macros while the figures are built.

    Every file goes through the suite's atomic writer into a staging folder inside `out`; only
    when the whole report is written does `commit` move each file into place (renames, which need
    no space). The first write that fails raises ReportWriteFailed and `discard` removes the
    staging folder, so a full disk leaves no 0-byte or half-written file and the last good
    report stays as it was (tests/test_report_stores.py::test_a_full_disk_keeps_the_last_report)."""

    SUBFOLDERS = ("figures", "tables", "generated")

    def __init__(self, out: str):
        self.out = out
        self.notes: list[str] = []
        self.macros: dict[str, str] = {}
        self.written: list[str] = []
        self.captions: dict[str, tuple[str, str]] = {}
        """Per written .png and .md: (caption, answer) as given, "" where none was (page.py fills them in)."""
        self.runs_read: dict[str, str] = {}
        """Per written .png: the runs it read, said after its caption on the page."""
        self.staged: dict[str, str] = {}
        """Each file written so far, relative to `out` -> where it waits until commit."""
        self.made = [os.path.join(out, sub) for sub in self.SUBFOLDERS if not os.path.isdir(os.path.join(out, sub))]
        folder = os.path.abspath(out)
        while not os.path.isdir(folder):  # `out` and the parents it needs
            self.made.insert(0, folder)
            folder = os.path.dirname(folder)
        # self.made: removed again, if empty, when the build fails
        try:
            for path in self.made:
                os.makedirs(path, exist_ok=True)
            self.stage = tempfile.mkdtemp(prefix=".report-", dir=out)
        except OSError as err:
            self.stage = ""
            self.discard()
            raise ReportWriteFailed(out, "its folders", err) from err

    def put(self, name: str, data: bytes) -> None:
        """Write `name` (relative to `out`) whole into the staging folder (after commit, in place);
        the first failure stops the report (ReportWriteFailed), whatever figure or table it was part of."""
        path = os.path.join(self.stage or self.out, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_write(path, data)
        except OSError as err:
            raise ReportWriteFailed(self.out, name, err) from err
        self.staged[name] = path

    def has(self, name: str) -> bool:
        return name in self.staged

    def read(self, name: str) -> bytes:
        with open(self.staged[name], "rb") as f:
            return f.read()

    def commit(self) -> None:
        """Every staged file into place (a rename each: no new space needed), then the staging folder goes."""
        for name, path in self.staged.items():
            self.staged[name] = os.path.join(self.out, name)
            os.replace(path, self.staged[name])
        shutil.rmtree(self.stage, ignore_errors=True)
        self.stage, self.made = "", []

    def discard(self) -> None:
        """The build failed: its staged files go, and the folders it made if they are empty."""
        if self.stage:
            shutil.rmtree(self.stage, ignore_errors=True)
        for path in reversed(self.made):
            try:
                os.rmdir(path)
            except OSError:
                pass

    def note(self, line: str) -> None:
        self.notes.append(line)
        print(f"report: {line}", file=sys.stderr)

    def figure(self, fig, name: str, data: pd.DataFrame, caption: str = "", answer: str = "", read: str = "") -> None:
        """Saves `fig` as figures/<name>.pdf|.png and `data` as its CSV; the page shows `caption`
        and `answer` where given, else page.FIGURE_TEXT's, where the figure texts live, and after
        the caption `read`: the runs the figure read, where its family says (runs_read)."""
        from analysis.report.plotting import plt  # only a drawn figure needs matplotlib

        images = {}
        try:
            for ext, options in ((".pdf", {"metadata": {"CreationDate": None}}), (".png", {"dpi": 130})):
                images[ext] = io.BytesIO()
                fig.savefig(images[ext], format=ext[1:], bbox_inches="tight", **options)
        finally:
            plt.close(fig)
        rel = os.path.join("figures", name)
        for ext, image in images.items():
            self.put(rel + ext, image.getvalue())
        self.put(rel + ".csv", data.to_csv(index=False, float_format=FLOAT_FORMAT).encode())
        base = os.path.join(self.out, rel)
        self.written.append(base + ".png")
        self.captions[base + ".png"] = (caption, answer)
        if read:
            self.runs_read[base + ".png"] = read

    def table(self, name: str, frame: pd.DataFrame, caption: str) -> None:
        rel = os.path.join("tables", name)
        self.put(rel + ".csv", frame.to_csv(index=False, float_format=FLOAT_FORMAT).encode())
        self.put(rel + ".md", (_markdown(frame) + "\n").encode())
        self.put(rel + ".tex", _latex(frame, caption, name).encode())
        base = os.path.join(self.out, rel)
        self.written.append(base + ".md")
        self.captions[base + ".md"] = (caption, "")

    def number(self, name: str, value, fmt: str = "{:,.0f}") -> None:
        text = value if isinstance(value, str) else fmt.format(value)
        if self.macros.get(name, text) != text:
            raise ValueError(f"macro \\{name} would mean both {self.macros[name]} and {text}")
        self.macros[name] = text

    def write(self, made: FigureData) -> None:
        """The tables and numbers a data function collected, in its order (a clash still raises)."""
        for name, frame, caption in made.tables:
            self.table(name, frame, caption)
        for name, value, fmt in made.numbers:
            self.number(name, value, fmt)

    def write_macros(self) -> None:
        lines = ["% Generated by `python -m analysis.report`: every number the text quotes. Do not edit."]
        lines += [f"\\newcommand{{\\{name}}}{{{_tex_escape(value)}}}" for name, value in sorted(self.macros.items())]
        self.put(os.path.join("generated", "numbers.tex"), ("\n".join(lines) + "\n").encode())


# ---------------------------------------------------------------------- formatting helpers
def _tex_escape(text: str) -> str:
    return str(text).replace("%", "\\%").replace("_", "\\_").replace("&", "\\&").replace("#", "\\#")


def _cell(value) -> str:
    """A table cell as text: a missing number is "-", never "nan" (a data function that has too few
    runs for a value says so in the cell itself; this is the last guard)."""
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return "-"
    return str(value)


def _markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


HEADER_WIDTH = 18
"""The longest line of a table's header (characters): a table that is wider than the text is
shrunk to it, so its headers, not its values, set how small it prints (the pqn table's
single-line headers once shrank it past legibility)."""


def _header(column: str) -> str:
    """A long column name stacked into lines: broken at its commas, then at spaces, each line at
    most HEADER_WIDTH characters where its words allow (tests/test_report_data.py::
    test_long_headers_stack_and_tables_only_shrink)."""
    text = str(column)
    lines = [line for part in (_top_level_parts(text) if len(text) > HEADER_WIDTH else [text])
             for line in textwrap.wrap(part, HEADER_WIDTH, break_long_words=False, break_on_hyphens=False)]
    parts = [_tex_escape(line) for line in lines or [text]]
    if len(parts) == 1:
        return "\\textbf{" + parts[0] + "}"
    # "\\{}": a line that opens with "[" would be read as the line break's optional skip.
    return "\\textbf{\\shortstack[l]{" + "\\\\{}".join(parts) + "}}"


def _top_level_parts(text: str) -> list[str]:
    """`text` split at the ", " that sit outside brackets: "median [min, max]" stays whole."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        if depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    return parts + [text[start:]]


def _latex(frame: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs table, shrunk to the text width when wider and never enlarged (a narrow table
    scaled up to the width printed in a larger type than the text)."""
    columns = " & ".join(_header(c) for c in frame.columns)
    rows = " \\\\\n".join(" & ".join(_tex_escape(_cell(v)) for v in row) for row in frame.itertuples(index=False))
    width = "\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi"
    return (f"\\begin{{table}}[t]\n\\centering\\small\n\\caption{{{_tex_escape(caption)}}}\\label{{tab:{label}}}\n"
            f"\\resizebox{{{width}}}{{!}}{{\\begin{{tabular}}{{{'l' * len(frame.columns)}}}\n\\toprule\n"
            f"{columns} \\\\\n\\midrule\n{rows} \\\\\n\\bottomrule\n\\end{{tabular}}}}\n\\end{{table}}\n")


def _ci(point: float, low: float, high: float, fmt: str = "{:,.0f}") -> str:
    if not np.isfinite(point):
        return "-"
    if not (np.isfinite(low) and np.isfinite(high)):
        return fmt.format(point) + " (1 seed)"
    return f"{fmt.format(point)} [{fmt.format(low)}, {fmt.format(high)}]"


_DIGITS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]
_NUMBERS = {16: "Sixteen", 1000: "Thousand"}


def macro_name(*parts) -> str:
    """LaTeX macro names take letters only: ('actor_learner', 2, 'hogwild (lock)') ->
    'ActorLearnerTwoHogwildLock'; numbers are spelled (16 -> Sixteen, 0.25 -> ZeroPointTwoFive)."""
    out = []
    for part in parts:
        if isinstance(part, (int, float, np.integer, np.floating)):
            value = float(part)
            if value.is_integer() and int(value) in _NUMBERS:
                out.append(_NUMBERS[int(value)])
                continue
            text = f"{value:g}"
            out.append("".join("Point" if ch == "." else _DIGITS[int(ch)] for ch in text if ch != "-"))
            continue
        for token in re.split(r"[^A-Za-z0-9]+", str(part)):
            if token.isdigit():
                out.append(macro_name(int(token)))
            elif token:
                out.append(token[0].upper() + token[1:])
    return "".join(out)


# ---------------------------------------------------------------------- selecting runs
def _sweep(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    return runs[runs["sweep"] == name]


def holdout_auc(holdout: pd.DataFrame, run_ids: pd.Series) -> pd.Series:
    """Each run's mean holdout return over its checkpoints (the area under its curve, per
    checkpoint), aligned with `run_ids`."""
    return run_ids.map(holdout[holdout["run_id"].isin(run_ids)].groupby("run_id")["return_mean"].mean())


def made_alone(runs: pd.DataFrame) -> pd.Series:
    """Whether each run's env steps/s is a measurement: it was made alone, not by a sweep's
    `--jobs N` beside N - 1 others (`runs_at_once`; runs older than that field count as alone)."""
    return pd.to_numeric(runs["runs_at_once"], errors="coerce").fillna(1) <= 1


SPEED_COLUMNS = ("env_steps_per_sec", LEARNING_RATE)
"""A run's speeds: over the whole run, and once learning (analysis.load.learning_rate)."""


def speeds_only_where_made_alone(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy of `runs` whose speeds are NaN where a run shared the CPU (not made_alone): a figure
    never quotes them (tests/test_report_data.py::test_speeds_of_runs_made_several_at_once_are_never_quoted)."""
    runs = runs.copy()
    runs.loc[~made_alone(runs), list(SPEED_COLUMNS)] = np.nan
    return runs


DEDICATED_SWEEPS = {"utd", "hogwild", "scaling", "uneven", "seed_shape", "shape_check", "shape_confirm", "per_hour",
                    "minatar_suite", "pqn", "own_wait", "apex_epsilons", "speed", "vector_check"}
"""Sweeps with figures of their own; any other sweep of training runs feeds the headline figures."""
HEADLINE_SWEEPS = ("architectures", "minatar")
"""The headline comparisons at equal env steps, one env each (CartPole; MinAtar Breakout)."""


def env_first(env: str) -> tuple[bool, str]:
    """Sort key of envs in tables and panels: CartPole, the study's first env (whose macros carry
    no env tag), before the others in name order."""
    return env != "CartPole", env


def diverged(runs: pd.DataFrame) -> pd.Series:
    """Whether each run's result says `"diverged": true` (a non-finite TD loss or Q value stopped
    it, or high_utd's |Q| check fired); runs that stored no such field did not."""
    return runs["diverged"].eq(True) if "diverged" in runs else pd.Series(False, index=runs.index)


def runs_read(runs: pd.DataFrame) -> str:
    """Which stored runs a figure or table read, for its caption: `6 runs of the smoke sweep`, or
    `50 runs: 30 of the architectures sweep, 20 of the minatar sweep`."""
    if "sweep" not in runs:
        return f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    sweeps = runs["sweep"].fillna("").astype(str).value_counts().sort_index()
    where = {s: f"the {s} sweep" if s else "no sweep" for s in sweeps.index}
    if len(sweeps) == 1:
        return f"{len(runs)} run{'s' if len(runs) != 1 else ''} of {where[sweeps.index[0]]}"
    return f"{len(runs)} runs: " + ", ".join(f"{n} of {where[s]}" for s, n in sweeps.items())


def headline_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run of the headline comparison, diverged ones included: the headline sweeps, or else
    every training run outside the dedicated sweeps (e.g. `smoke`, or your own sweep)."""
    chosen = runs[runs["sweep"].isin(HEADLINE_SWEEPS)]
    if chosen.empty:
        chosen = runs[runs["experiment"].isin(TRAINING_EXPERIMENTS) & ~runs["sweep"].isin(DEDICATED_SWEEPS)]
    return chosen


def _headline(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that compare architectures at equal env steps (headline_runs), less those that
    diverged: a diverged run is never an ordinary row of the headline's IQMs and intervals; the
    architectures table counts them beside each design instead (learning.speed_quality_data;
    tests/test_report_stores.py::test_a_diverged_run_is_counted_apart_from_the_headline). The utd
    grid, whose question is divergence, keeps its runs."""
    chosen = headline_runs(runs)
    return chosen[~diverged(chosen)]


def diverged_line(runs: pd.DataFrame) -> str | None:
    """`n of m headline runs diverged and are left out: <run ids>`, or None where none did."""
    chosen = headline_runs(runs)
    out = chosen.loc[diverged(chosen), "run_id"].sort_values()
    if out.empty:
        return None
    return f"{len(out)} of {len(chosen)} headline runs diverged and are left out: {', '.join(out)}"


def _arch_label(row) -> str:
    if row["architecture"] in ("single_env", "high_utd"):
        label = row["architecture"] if row["architecture"] == "single_env" else f"high_utd (utd {row['utd']:g})"
    else:
        label = f"{row['architecture']} ({int(row['num_workers'])})"
    overrides = row.get("overrides") if hasattr(row, "get") else None
    return f"{label} [{overrides}]" if isinstance(overrides, str) and overrides else label  # a sweep's `with ...`


def _regular_curves(note: Note, holdout: pd.DataFrame, figure: str) -> pd.DataFrame:
    """Keep runs whose checkpoint grid matches their group's most common grid; name the others."""
    keep = []
    for _, group in holdout.groupby(["env", "architecture", "num_workers"], sort=True):
        grids = group.groupby("run_id")["env_step"].apply(tuple)
        usual = Counter(grids).most_common(1)[0][0]
        for run_id, grid in grids.items():
            if grid != usual:
                note(f"{figure}: run {run_id} has holdout checkpoints {list(grid)[:4]}... unlike the "
                     f"{list(usual)[:4]}... of its group; left out of this figure")
        keep.extend(grids[grids == usual].index)
    return holdout[holdout["run_id"].isin(keep)]
