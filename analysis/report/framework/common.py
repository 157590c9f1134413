"""What every figure family shares: the Report that writes outputs, the figure data a family hands
its drawing, the committed inputs. No matplotlib here (plotting.py has it), so the families' data
functions can run without it. Table and macro formatting live in formatting.py, the selection of
runs in selection.py; every name is re-exported here, where the families import them from."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import sys
import tempfile

import pandas as pd

from analysis.report.framework.formatting import (HEADER_WIDTH, cell, ci, stacked_header, latex, markdown,  # noqa: F401
                                                  tex_escape, top_level_parts, macro_name)
from analysis.report.framework.selection import (DEDICATED_SWEEPS, HEADLINE_SWEEPS, PREDICTED, PREDICTION_KEY,  # noqa: F401
                                                 SPEED, SPEED_COLUMNS, Note, arch_label, headline, regular_curves, sweep_runs,
                                                 diverged, diverged_line, env_first, headline_runs, holdout_auc, made_alone,
                                                 predicted_speed, runs_read, speed_missing, speeds_only_where_made_alone,
                                                 with_speed)
from architectures.registry import NAMES
from architectures.core.atomic import atomic_write

ARCH_ORDER = list(NAMES)  # the registry's order: tables list designs, and figures colour them, by it
FLOAT_FORMAT = "%.6g"
TIMING_EXPERIMENT = "update_timing"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the checkout
"""The checkout this package runs from."""


def committed(*parts: str) -> str:
    """A committed input (results/reference, results/benchmarks), found from the package, never
    from the working directory: the report reads the same files wherever it is run from."""
    return os.path.join(REPO, *parts)


DEFAULT_RUNS = committed("results", "reference")


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
        self.empty: list[str] = []  # sections a note said have nothing to show
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
        """Keep `line` for the page; print it, unless it only says a section has nothing to show
        here ("SECTION: no runs of ..."): those are counted in one line at the end (`empty_line`)."""
        self.notes.append(line)
        section, _, rest = line.partition(": ")
        if rest.startswith("no ") and section:
            self.empty.append(section)
        else:
            print(f"report: {line}", file=sys.stderr)

    def empty_line(self) -> str:
        """One line for the sections with nothing to show, in place of a line each."""
        if not self.empty:
            return ""
        named = list(dict.fromkeys(self.empty))
        return (f"report: nothing to show here for {len(named)} sections ({', '.join(named)}): the page's notes "
                "name the sweep that makes each")

    def figure(self, fig, name: str, data: pd.DataFrame, caption: str = "", answer: str = "", read: str = "") -> None:
        """Saves `fig` as figures/<name>.pdf|.png and `data` as its CSV; the page shows `caption`
        and `answer` where given, else page.FIGURE_TEXT's, where the figure texts live, and after
        the caption `read`: the runs the figure read, where its family says (runs_read)."""
        # Only a drawn figure needs matplotlib: `fig` came from plotting.py, which loaded pyplot on
        # the Agg backend. Imported from there, this module and plotting.py would import each other.
        import matplotlib.pyplot as plt

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
        self.put(rel + ".md", (markdown(frame) + "\n").encode())
        self.put(rel + ".tex", latex(frame, caption, name).encode())
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
        lines += [f"\\newcommand{{\\{name}}}{{{tex_escape(value)}}}" for name, value in sorted(self.macros.items())]
        self.put(os.path.join("generated", "numbers.tex"), ("\n".join(lines) + "\n").encode())
