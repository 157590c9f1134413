"""The report as a page: `index.html` beside the figures, tables and numbers, so that a reader
without LaTeX opens one file from disk and sees each figure with the question it answers, each
table, the runs behind them, what was left out and why, and the command that rebuilds it all.

It is self-contained (inline CSS, relative links, no JavaScript, nothing fetched), every text is
escaped, and it is written whole or not at all, with the rest of the report (common.Report). The figure texts live here, in FIGURE_TEXT, and
nowhere else; tests/test_report_page.py opens the page in a headless browser."""

from __future__ import annotations

import html
import io
import os
import re
import shlex
from urllib.parse import quote

import pandas as pd

from analysis.report.framework.common import SPEED, committed
from analysis.report.framework.page_text import FIGURE_TEXT

PAGE = "index.html"

CSS = """body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:1em 1.5em;color:#222}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:1px solid #ccc;margin-top:2em}nav a{margin-right:1em}
pre{background:#f4f4f4;padding:.6em;overflow-x:auto;white-space:pre-wrap}.answer{background:#eef5ff;padding:.5em .8em}
figure{margin:1.5em 0}img{max-width:100%;border:1px solid #ddd}figcaption{color:#444}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em}
th{background:#f0f0f0}.wide{overflow-x:auto}li{margin:.2em 0}"""


def fill(text: str, macros: dict[str, str]) -> str:
    """`text` with each {Macro} replaced by its value; a sentence naming a missing one is dropped."""
    kept = []
    for sentence in re.split(r"(?<=[.?!])\s+", text):
        names = re.findall(r"\{([A-Za-z]+)\}", sentence)
        if all(name in macros for name in names):
            kept.append(re.sub(r"\{([A-Za-z]+)\}", lambda m: macros[m.group(1)], sentence))
    return " ".join(kept)


def _link(path: str) -> str:
    return html.escape(quote(path.replace(os.sep, "/")))


def _table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<div class="wide"><table><tr>{head}</tr>{rows}</table></div>'


def _texts(report, path: str) -> tuple[str, str, str]:
    """(name, caption, answer) of a written figure: as given to Report.figure, else FIGURE_TEXT's."""
    name = os.path.splitext(os.path.basename(path))[0]
    caption, answer = report.captions.get(path, ("", ""))
    default = FIGURE_TEXT.get(name, (name, ""))
    read = report.runs_read.get(path, "")
    caption = fill(caption or default[0], report.macros) + (f" Runs read: {read}." if read else "")
    return name, caption, fill(answer or default[1], report.macros)


def _figure(report, path: str) -> str:
    name, caption, answer = _texts(report, path)
    rel = os.path.relpath(path, report.out)
    base = rel[:-len(".png")]
    links = ", ".join(f'<a href="{_link(base + ext)}">{ext[1:].upper()}</a>' for ext in (".pdf", ".csv")
                      if report.has(base + ext))
    return (f'<figure id="figure-{html.escape(name)}"><h3>{html.escape(name)}</h3>'
            + (f'<p class="answer">{html.escape(answer)}</p>' if answer else "")
            + f'<img src="{_link(rel)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)} ({links})</figcaption></figure>")


def _contents(report, figures: list[str], tables: list[str]) -> str:
    """One line a figure (its question, the answer's first sentence) and one a table, linked."""
    items = []
    for path in figures:
        name, _, answer = _texts(report, path)
        question = answer.split("? ")[0] + "?" if "? " in answer else ""
        items.append(f'<li><a href="#figure-{html.escape(name)}">{html.escape(name)}</a> {html.escape(question)}</li>')
    names = [os.path.splitext(os.path.basename(p))[0] for p in tables]
    line = ", ".join(f'<a href="#table-{html.escape(n)}">{html.escape(n)}</a>' for n in names)
    return f"<ul>{''.join(items)}</ul><p>Tables: {line or 'none'}</p>"


def _table_section(report, path: str) -> str:
    name = os.path.splitext(os.path.basename(path))[0]
    rel = os.path.relpath(path, report.out)[:-len(".md")]
    frame = pd.read_csv(io.BytesIO(report.read(rel + ".csv")), dtype=str, keep_default_na=False)
    links = ", ".join(f'<a href="{_link(rel + ext)}">{ext[1:].upper()}</a>' for ext in (".csv", ".md", ".tex"))
    return (f'<section id="table-{html.escape(name)}"><h3>{html.escape(name)}</h3>'
            f"<p>{html.escape(report.captions.get(path, ('', ''))[0])} ({links})</p>{_table(frame)}</section>")


def _runs(runs: pd.DataFrame) -> str:
    frame = runs.rename(columns={"num_workers": "workers"})
    frame = frame[["run_id", "sweep", "env", "design", "workers", "seed"]].sort_values(["sweep", "run_id"])
    frame = frame.astype(object).where(frame.notna(), "")
    for column in ("workers", "seed"):  # whole numbers, though a column with gaps is float
        frame[column] = [int(v) if isinstance(v, float) and v.is_integer() else v for v in frame[column]]
    sweeps = ", ".join(f"{s or '(none)'}: {n}" for s, n in frame["sweep"].value_counts().sort_index().items())
    opened = " open" if len(frame) <= 30 else ""
    return (f"<details{opened}><summary>{len(frame)} runs ({html.escape(sweeps)})</summary>"
            f"{_table(frame)}</details>")


def _here(path: str) -> str:
    """A path under the working directory as relative to it (paper/index.html names no machine's
    folders: the Makefile passes absolute ones); anything else (a mongodb:// URL) as given."""
    if "://" in path:
        return path
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel


ANSWER = committed("paper", "tables", "answer.csv")
"""The reference study's answer, as the report wrote it from the committed runs."""
REFERENCE_SMOKE = committed("results", "reference", "smoke")
"""The smoke sweep run on the reference machine: what this machine's smoke speeds are set beside."""


def _answer_section() -> str:
    """The first screen: the committed study's answer, labelled as such."""
    if not os.path.exists(ANSWER):
        return ""
    return ('<section id="answer"><h2>The answer (the reference study: the committed runs)</h2>'
            "<p>Read from the suite's committed runs (results/reference), not from the runs this page reports: "
            "which design is faster than single_env, by how much, whether it learns as well, and what bounds it.</p>"
            f"{_table(pd.read_csv(ANSWER).fillna('-'))}</section>")


def _smoke_section(runset) -> str:
    """This machine's smoke speeds (env steps/s once learning starts, SPEED) beside the reference
    machine's: a check that the designs run and how fast here, labelled as saying nothing about
    learning. A run with no such rate (no log at or after learning_starts) is left out."""
    here = runset.runs[runset.runs["sweep"] == "smoke"]
    here = here[here[SPEED].notna()] if not here.empty else here
    if here.empty:
        return ""
    ref = pd.DataFrame()
    if os.path.isdir(REFERENCE_SMOKE):
        from analysis.io.load import load_runs

        ref = load_runs([REFERENCE_SMOKE]).runs
    rows = []
    for arch, group in here.groupby("design", sort=False):
        mine = float(group[SPEED].median())
        theirs = ref.loc[ref["design"] == arch, SPEED].dropna() if len(ref) else pd.Series(dtype=float)
        rows.append({"design": arch, "env steps/s once learning, here": f"{mine:,.0f}",
                     "on the reference machine": f"{theirs.median():,.0f}" if len(theirs) else "-",
                     "here / reference": f"{mine / theirs.median():.2f}" if len(theirs) else "-"})
    return ('<section id="smoke"><h2>This machine, just now: the smoke runs (a smoke check)</h2>'
            "<p>Tiny runs of every design, a minute in all: they show that each design runs here and how fast, "
            "beside the same runs on the reference machine. They say nothing about learning: their returns are "
            "from a few thousand env steps.</p>" + _table(pd.DataFrame(rows)) + "</section>")


def write(report, runset, sources: list[str], out: str) -> str:
    """Writes <out>/index.html for a built report and returns its path."""
    written = list(dict.fromkeys(report.written))
    figures = [p for p in written if p.endswith(".png")]
    tables = [p for p in written if p.endswith(".md")]
    python = _here(committed(".venv", "bin", "python"))  # the README's install, from where this report was built
    command = shlex.join([python, "-m", "analysis.report", "--runs", *map(_here, sources), "--out", _here(out)])
    cores = report.macros.get("CpuCount", "?")
    machine = f"on {report.macros.get('CpuModel', 'unknown')} ({'unknown' if cores == '?' else cores} cores)"
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in report.notes) or "<li>none: every run was used</li>"
    body = [
        "<h1>Parallel DQN on CPU: the report</h1>",
        _answer_section(),
        _smoke_section(runset),
        f"<p>{len(runset.runs)} stored runs, {machine}: {len(figures)} figures, {len(tables)} tables, "
        f'{len(report.macros)} <a href="generated/numbers.tex">numbers</a>, {len(report.notes)} notes.</p>',
        '<nav><a href="#figures">Figures</a><a href="#tables">Tables</a><a href="#runs">Runs</a>'
        '<a href="#notes">Left out, and why</a><a href="#rebuild">Rebuild</a></nav>',
        f'<h2 id="rebuild">Rebuild</h2><pre>{html.escape(command)}</pre>',
        f'<h2 id="contents">What each figure answers</h2>{_contents(report, figures, tables)}',
        '<h2 id="figures">Figures</h2>', *(_figure(report, p) for p in figures),
        '<h2 id="tables">Tables</h2>', *(_table_section(report, p) for p in tables),
        f'<h2 id="runs">Runs used</h2>{_runs(runset.runs)}',
        f'<h2 id="notes">Left out, and why</h2><ul>{notes}</ul>',
    ]
    text = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Parallel DQN report</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    report.put(PAGE, text.encode("utf-8"))  # whole or not at all, with the rest of the report
    return os.path.join(out, PAGE)
