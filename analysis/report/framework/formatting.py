"""How a table and a number are written: a table as Markdown and as a booktabs LaTeX table, a
cell, an interval, a LaTeX macro's name. Split from common.py, which re-exports every name, so the
families' imports from there keep working."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd


def tex_escape(text: str) -> str:
    """Text with LaTeX's special characters escaped, for captions and table cells."""
    return str(text).replace("%", "\\%").replace("_", "\\_").replace("&", "\\&").replace("#", "\\#")


def cell(value) -> str:
    """A table cell as text: a missing number is "-", never "nan" (a data function that has too few
    runs for a value says so in the cell itself; this is the last guard)."""
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return "-"
    return str(value)


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table, each cell formatted as `cell` does."""
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


HEADER_WIDTH = 18
"""The longest line of a table's header (characters): a table that is wider than the text is
shrunk to it, so its headers, not its values, set how small it prints (the pqn table's
single-line headers once shrank it past legibility)."""


def stacked_header(column: str) -> str:
    """A long column name stacked into lines: broken at its commas, then at spaces, each line at
    most HEADER_WIDTH characters where its words allow (tests/test_report_data.py::
    test_long_headers_stack_and_tables_only_shrink)."""
    text = str(column)
    lines = [line for part in (top_level_parts(text) if len(text) > HEADER_WIDTH else [text])
             for line in textwrap.wrap(part, HEADER_WIDTH, break_long_words=False, break_on_hyphens=False)]
    parts = [tex_escape(line) for line in lines or [text]]
    if len(parts) == 1:
        return "\\textbf{" + parts[0] + "}"
    # "\\{}": a line that opens with "[" would be read as the line break's optional skip.
    return "\\textbf{\\shortstack[l]{" + "\\\\{}".join(parts) + "}}"


def top_level_parts(text: str) -> list[str]:
    """`text` split at the ", " that sit outside brackets: "median [min, max]" stays whole."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        if depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    return parts + [text[start:]]


def latex(frame: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs table, shrunk to the text width when wider and never enlarged (a narrow table
    scaled up to the width printed in a larger type than the text)."""
    columns = " & ".join(stacked_header(c) for c in frame.columns)
    rows = " \\\\\n".join(" & ".join(tex_escape(cell(v)) for v in row) for row in frame.itertuples(index=False))
    width = "\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi"
    return (f"\\begin{{table}}[t]\n\\centering\\small\n\\caption{{{tex_escape(caption)}}}\\label{{tab:{label}}}\n"
            f"\\resizebox{{{width}}}{{!}}{{\\begin{{tabular}}{{{'l' * len(frame.columns)}}}\n\\toprule\n"
            f"{columns} \\\\\n\\midrule\n{rows} \\\\\n\\bottomrule\n\\end{{tabular}}}}\n\\end{{table}}\n")


def ci(point: float, low: float, high: float, fmt: str = "{:,.0f}") -> str:
    """A point with its interval as the tables print it; one seed says so instead of an interval."""
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
