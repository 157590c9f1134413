"""The committed paper/main.pdf is as fresh as its numbers: every value that main.tex quotes
through a macro of generated/numbers.tex appears in the PDF's text.

The report regenerates numbers.tex from the stored runs (tests/test_analysis.py checks that the
committed one is what the runs give); a PDF built before a number changed does not hold the new
value, and this test names it. Rebuild with `make -C paper` (LaTeX: `./setup.sh --paper`).
"""

from __future__ import annotations

import os
import re

import pytest

pypdf = pytest.importorskip("pypdf", reason="pypdf is a test extra: pip install -e '.[test]'")

PAPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "paper")


def _normalised(text: str) -> str:
    """Text as compared: no whitespace (pdf text breaks lines anywhere) and ASCII minus and
    quotes (LaTeX typesets - in math as a Unicode minus)."""
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\ufb01", "fi").replace("\ufb02", "fl")
    return re.sub(r"\s+", "", text)


def _quoted_values() -> dict[str, str]:
    with open(os.path.join(PAPER, "generated", "numbers.tex")) as f:
        numbers = dict(re.findall(r"\\newcommand\{\\(\w+)\}\{([^}]*)\}", f.read()))
    with open(os.path.join(PAPER, "main.tex")) as f:
        tex = f.read()
    return {name: value for name, value in numbers.items() if re.search(r"\\" + name + r"(?![A-Za-z])", tex)}


def _latex_text(value: str) -> str:
    """A macro's value as the PDF shows it: LaTeX's own escapes undone."""
    return (value.replace(r"\%", "%").replace(r"\_", "_").replace("{,}", ",").replace("$", "").replace(r"\,", "")
            .replace("~", ""))


def test_the_committed_pdf_holds_every_number_the_text_quotes():
    values = _quoted_values()
    assert len(values) > 50  # the text quotes its numbers through macros
    reader = pypdf.PdfReader(os.path.join(PAPER, "main.pdf"))
    text = _normalised("".join(page.extract_text() or "" for page in reader.pages))
    missing = {name: value for name, value in values.items() if _normalised(_latex_text(value)) not in text}
    assert not missing, (f"paper/main.pdf is older than generated/numbers.tex: {len(missing)} quoted values are not "
                         f"in it, e.g. {dict(list(missing.items())[:5])}; rebuild it with `make -C paper`")
