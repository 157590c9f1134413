"""Every number paper/main.tex states comes through generated/numbers.tex, or is a literal this
test allows by name.

The rule:
- A MEASURED number (anything a run, a benchmark or a stored result produced, and whatever is
  computed from them: rates, ratios, shares, ranges, misses, window lengths, which cells missed,
  how many seeds an interval would need) is always a macro that `python -m analysis.report` writes
  from the stored data (`made.number(...)` in analysis/report/*.py).
- A SETTING that says how the runs were made (a budget, a seed range, a number of seeds, a wait or
  an env step's cost, the worker counts a sweep ran) is a macro too, read from the runs' stored
  configs or from the analysis constant that sets it: the text quotes what ran.
- What may stay a literal is in ALLOWED, each with its reason: constants of the envs and of the
  statistics, the labels that name a cell (a design's worker count in "hogwild (2)", a utd ratio,
  a batch size of the threads sweep), and settings of published work cited beside ours. No entry
  may be a measurement, and an entry that matches nothing is stale and fails.
- Small counts of a design's shape written as words ("two workers", "one update per four env
  steps") are prose, not numbers. A measured number is never spelled out to pass this test.

What is read: main.tex without comments, its preamble and its bibliography; without the arguments
of \\cite..., \\ref, \\label, \\includegraphics, \\input and \\url (names, not numbers) and the
tabular column specs; and without the digits inside \\texttt{...} (code, commands and paths, whose
flags are the commands' own: `--seeds 10`). Every token that still holds a digit must lie inside a
match of an ALLOWED pattern; a failure names the token and its line.
"""

from __future__ import annotations

import os
import re

PAPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "paper")

ALLOWED = [
    (r"CartPole-v1", "the env's id"),
    (r"\$10\\times10\\times4\$", "MinAtar's observation shape"),
    (r"\b95\\%", "the level of every interval (analysis/stats.py)"),
    (r"\b0\.05\b", "Holm's level, below which a comparison is told apart (analysis/report/framework/claims.py ALPHA)"),
    (r"\b0\.5\b", "P(improvement) of two designs that learn alike: what an interval is read against"),
    (r"\b(475|500)\b", "CartPole-v1's solved threshold and its return cap (claims.py SOLVED_AT, CAP)"),
    (r"\b20\\%", "the cost model's criterion, fixed before any prediction (the macros ...CellsWithinTwenty)"),
    (r"(hogwild|actor\\_learner|vector\\_env)\}? \(\d+\)", "a design's worker count where it labels the cell: hogwild (2)"),
    (r"\butd\s+\d+(, \d+)*( and \d+)?\b", "the utd grid's ratios where they label its cells: utd 4 with LayerNorm"),
    (r"\bbatch(\s+of\s+|\s+)(32|128|512)\b", "the threads sweep's batch sizes where they label its cells (...BatchThreeTwo...)"),
    (r"\bH200\b", "the lent GPU's model name"),
    (r"\\varepsilon_i = 0\.4\^\{1\+7i/\(N-1\)\}", "Ape-X's per-actor epsilon rule, cited (Horgan et al.; apex.py)"),
    (r"probability 0\.1\b", "MinAtar's default sticky-action probability (minatar.Environment), cited"),
    (r"\b1-step\b|\$2\.5\\times10\^\{-4\}\$|\b5M frames",
     "Young & Tian's n-step, learning rate and budget, cited beside ours (their return is \\MinatarAnchorBreakout)"),
]
"""(pattern, why it may stay a literal): what the text may state without a macro."""


def _blank(match: re.Match) -> str:
    """The match as spaces, its line breaks kept, so line numbers still point at main.tex."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose(tex: str) -> str:
    """main.tex as this test reads it (module doc): what is not prose is blanked, line for line."""
    tex = re.sub(r"(?<!\\)%[^\n]*", _blank, tex)
    start = tex.find("\\begin{document}")
    tex = re.sub(r"[^\n]", " ", tex[:start]) + tex[start:] if start >= 0 else tex
    tex = re.sub(r"\\begin\{thebibliography\}.*?\\end\{thebibliography\}", _blank, tex, flags=re.DOTALL)
    tex = re.sub(r"\\(?:cite[a-z]*|ref|label|input|url|includegraphics)\*?(?:\[[^\]]*\])?\{[^{}]*\}", _blank, tex)
    tex = re.sub(r"\\begin\{tabular\}\{(?:[^{}]|\{[^{}]*\})*\}", _blank, tex)
    return re.sub(r"\\texttt\{[^{}]*\}", lambda m: re.sub(r"\d", " ", m.group(0)), tex)


def unexplained_numbers(tex: str) -> list[tuple[int, str]]:
    """(line, token) of every digit-bearing token of prose(tex) that no ALLOWED pattern covers."""
    text = prose(tex)
    for pattern, _ in ALLOWED:
        text = re.sub(pattern, _blank, text)
    found = []
    for number, (line, original) in enumerate(zip(text.split("\n"), tex.split("\n")), 1):
        tokens = {}  # the whitespace-delimited token of main.tex around each digit left, by where it starts
        for match in re.finditer(r"\d", line):
            left = original.rfind(" ", 0, match.start()) + 1
            right = original.find(" ", match.end())
            tokens.setdefault(left, original[left:right if right >= 0 else None])
        found += [(number, token) for _, token in sorted(tokens.items())]
    return found


def _main_tex() -> str:
    with open(os.path.join(PAPER, "main.tex")) as f:
        return f.read()


def test_every_number_in_the_text_is_a_macro_or_an_allowed_literal():
    found = unexplained_numbers(_main_tex())
    assert not found, ("paper/main.tex states numbers that are neither macros of generated/numbers.tex nor "
                       "allowed literals (tests/test_paper_numbers.py ALLOWED): "
                       + "; ".join(f"line {line}: {token!r}" for line, token in found)
                       + ". Write a measured number through a macro the report makes from the stored data")


def test_every_allowed_literal_is_used():
    text = prose(_main_tex())
    stale = [pattern for pattern, _ in ALLOWED if not re.search(pattern, text)]
    assert not stale, f"ALLOWED entries that match nothing in main.tex any more (remove them): {stale}"


def test_every_macro_the_text_uses_is_generated():
    tex = _main_tex()
    body = prose(tex)
    with open(os.path.join(PAPER, "generated", "numbers.tex")) as f:
        defined = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", f.read()))
    used = set(re.findall(r"\\([A-Z][A-Za-z]+)", body))
    assert used, "main.tex uses no generated macros"
    missing = sorted(used - defined)
    assert not missing, f"main.tex uses macros generated/numbers.tex does not define: {missing}"


def test_the_reader_finds_a_planted_number_and_skips_names():
    tex = ("\\usepackage[margin=2.2cm]{geometry}\n\\begin{document}\n"
           "hogwild (2) ran \\ScalingHogwildTwoCostZero{} env steps/s % 3,011 in a comment\n"
           "\\citet{young2019minatar} and Figure~\\ref{fig:3} at 95\\% and \\texttt{--seeds 10}\n"
           "but 1,247 is typed and so is $-35$\\%\n"
           "\\begin{thebibliography}{13}\\bibitem{x} 2019\\end{thebibliography}\n\\end{document}\n")
    assert unexplained_numbers(tex) == [(5, "1,247"), (5, "$-35$\\%")]
