"""The report as a page (analysis/report/framework/page.py): index.html names every figure and table the
report wrote, with its caption and answer, the runs used, every note and the rebuild command;
every link and image resolves on disk; and, in headless Chromium, every image loads, no link is
broken and the console stays clean. CI sets REQUIRE_BROWSER=1, so there a missing browser fails
the test instead of skipping it."""

import glob
import html
import os
import re
import shlex
import shutil
import struct
from html.parser import HTMLParser
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import pytest
from sacred.observers import FileStorageObserver

from analysis import report as report_mod
from analysis.report.framework import page
from tests.synthetic_runs import headline_specs, make_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
ODD_NOTE = "a note with <b>tags</b> & an ampersand"


class _Parsed(HTMLParser):
    """The page's image sources, link targets and element ids."""

    def __init__(self, text: str):
        super().__init__()
        self.srcs, self.hrefs, self.ids = [], [], set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.ids.add(attrs.get("id"))
        if tag == "img":
            self.srcs.append(attrs["src"])
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The headline in miniature plus one diverged vector_env run (a note says it was left out),
    reported; then the page rewritten with a note that needs escaping."""
    root = tmp_path_factory.mktemp("page")
    make_runs(FileStorageObserver(str(root / "store" / "architectures")), headline_specs() + [
        {"run_id": "architectures-vector1", "seed": 1, "architecture": "vector_env", "num_workers": 2,
         "quality": -1_000.0, "diverged_at_update": 40}])
    sources, out = [str(root / "store")], str(root / "report")
    report = report_mod.build(sources, out)
    from analysis.io.load import load_runs

    report.notes.append(ODD_NOTE)
    page.write(report, load_runs(sources), sources, out)  # a second write replaces the first whole
    return report, sources, out, open(os.path.join(out, page.PAGE), encoding="utf-8").read()


def test_the_page_names_every_output_run_note_and_the_rebuild_command(built):
    report, sources, out, text = built
    figures = [os.path.basename(p)[:-4] for p in report.written if p.endswith(".png")]
    tables = [os.path.basename(p)[:-3] for p in report.written if p.endswith(".md")]
    assert {"learning_curves", "speed_quality", "improvement"} <= set(figures) and "architectures" in tables
    parsed = _Parsed(text)
    assert sorted(parsed.srcs) == sorted(f"figures/{name}.png" for name in figures)
    for name in figures:
        caption, answer = page.FIGURE_TEXT[name]
        assert f'id="figure-{name}"' in text and html.escape(page.fill(caption, report.macros)) in text
        assert html.escape(answer.split("? ")[0]) in text, name  # the question, at least
    for name in tables:
        caption = report.captions[os.path.join(out, "tables", name + ".md")][0]
        assert f'id="table-{name}"' in text and caption and html.escape(caption) in text
    # an answer's {Macro} is filled from the report's numbers; one naming a missing number drops that sentence
    assert f"{report.macros['CartPoleSingleEnvFinal']} for single_env" in text and "{" not in text.split("</style>")[1]
    assert "for hogwild" not in text  # no hogwild runs here: the scaling sentence that needs them is left out
    python = page._here(os.path.join(ROOT, ".venv", "bin", "python"))  # the README's install, not a bare `python`
    assert python.endswith(os.path.join(".venv", "bin", "python"))
    command = shlex.join([python, "-m", "analysis.report", "--runs", *sources, "--out", out])
    assert f"<pre>{html.escape(command)}</pre>" in text
    assert all(html.escape(note) in text for note in report.notes) and len(report.notes) > 5
    assert "architectures-vector1" in text and "diverged" in text
    assert html.escape(ODD_NOTE) in text and ODD_NOTE not in text
    for run_id in ("architectures-single1", "architectures-actor3", "architectures-highutd2"):
        assert f"<td>{run_id}</td>" in text
    assert glob.glob(os.path.join(out, ".index.html.*")) == []  # the atomic write left no temp file


def test_every_link_and_image_is_relative_and_on_disk(built):
    _, _, out, text = built
    parsed = _Parsed(text)
    assert parsed.srcs and parsed.hrefs
    for target in parsed.srcs + parsed.hrefs:
        assert not urlparse(target).scheme and not target.startswith("/"), target  # relative, no server, no CDN
        if target.startswith("#"):
            assert target[1:] in parsed.ids, target
        else:
            assert os.path.isfile(os.path.join(out, unquote(target))), target
    assert "<script" not in text.lower() and "@import" not in text and "url(" not in text


def test_a_figure_without_text_shows_under_its_name(built, monkeypatch):
    report, _, out, _ = built
    monkeypatch.delitem(page.FIGURE_TEXT, "improvement")
    shown = page._figure(report, os.path.join(out, "figures", "improvement.png"))
    assert '<h3>improvement</h3>' in shown and 'class="answer"' not in shown
    assert 'alt="improvement Runs read: 9 runs of the architectures sweep' in shown  # its name, then what it read
    assert page.fill("Why? Because. It was {X} of {Y}.", {"X": "3"}) == "Why? Because."
    assert page.fill("Why? It was {X}.", {"X": "3"}) == "Why? It was 3."
    # the rebuild command names a folder under the working directory relative to it (paper/ via the Makefile)
    assert page._here(os.path.abspath(os.path.join("results", "reference"))) == os.path.join("results", "reference")
    assert page._here("mongodb://host:27017/dqn") == "mongodb://host:27017/dqn"


def _figure_names_the_families_write() -> set[str]:
    from analysis.report.speed import shape

    names = set(shape.FIGURES.values())
    for path in glob.glob(os.path.join(ROOT, "analysis", "report", "**", "*.py"), recursive=True):
        names |= set(re.findall(r"report\.figure\(fig, \"([a-z_]+)\"", open(path).read()))
    return names


def test_every_figure_of_the_full_report_has_its_text():
    """Every figure the report on the stored runs wrote (paper/figures, its committed output) and
    every name a family passes to Report.figure has a caption and an answer; no entry is stale."""
    written = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "paper", "figures", "*.png"))}
    named = _figure_names_the_families_write()
    assert len(written) >= 10 and written <= named
    assert sorted(named - set(page.FIGURE_TEXT)) == []
    assert sorted(set(page.FIGURE_TEXT) - named) == []
    for name, (caption, answer) in page.FIGURE_TEXT.items():
        assert caption.endswith(".") and "?" in answer.split(". ")[0], name  # a question, then its answer


def _browser_or_skip():
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        why = (f"no {', '.join(missing)}: install with `./setup.sh --browser` (Debian's chromium and "
               "chromium-driver) and `pip install -e '.[test]'`")
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)


def test_the_page_reads_in_a_headless_browser(built):
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    report, _, out, text = built
    options = Options()
    options.binary_location = CHROMIUM  # both paths given: selenium-manager never downloads anything
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.get("file://" + os.path.abspath(os.path.join(out, page.PAGE)))
        images = driver.execute_script(
            "return Array.from(document.images, i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])")
        links = driver.execute_script(
            "return Array.from(document.querySelectorAll('a[href]'), a => [a.getAttribute('href'), a.href, "
            "a.hash && a.getAttribute('href').startsWith('#') ? !!document.getElementById(a.hash.slice(1)) : null])")
        shot = os.path.join(out, "index_first_screen.png")
        assert driver.save_screenshot(shot)
        answer_top = driver.execute_script("const e = document.getElementById('answer'); "
                                           "return e ? e.getBoundingClientRect().top : null")
        severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        title = driver.title
    finally:
        driver.quit()
    assert title == "Parallel DQN report"
    assert answer_top is not None and 0 <= answer_top < 900  # the reference answer opens the page
    assert len(images) == sum(p.endswith(".png") for p in report.written)
    assert [src for src, loaded in images if not loaded] == []
    assert len(links) == len(_Parsed(text).hrefs)
    broken = [href for href, url, anchor in links
              if (anchor is False) or (anchor is None and not os.path.isfile(url2pathname(urlparse(url).path)))]
    assert broken == []
    assert severe == []
    with open(shot, "rb") as f:
        head = f.read(24)
    width, height = struct.unpack(">II", head[16:24])
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and width >= 1000 and height >= 600
    assert os.path.getsize(shot) > 20_000  # text and a figure, not a blank screen


def test_no_command_the_readme_or_the_report_gives_writes_into_the_committed_reference_set():
    """results/reference/ is the writeup's committed runs: a note told users to resume a sweep with
    `--out results/reference/utd`. The browser test's needs, and how to install them,
    stand beside its skip in the README."""
    texts = {"README.md": open(os.path.join(ROOT, "README.md")).read()}
    for path in glob.glob(os.path.join(ROOT, "analysis", "report", "**", "*.py"), recursive=True):
        texts[os.path.relpath(path, ROOT)] = open(path).read()
    assert [name for name, text in texts.items() if "--out results/reference" in text] == []
    readme = texts["README.md"]
    assert "chromedriver" in readme and "`./setup.sh --browser`" in readme


def test_the_first_screen_labels_the_reference_answer_and_this_machines_smoke_speeds():
    """After the main job the page opens with the committed study's answer, labelled, then this
    machine's smoke speeds beside the reference machine's, labelled as a smoke check."""
    import pandas as pd

    from analysis.io.load import RunSet

    answer = page._answer_section()
    assert "reference study" in answer and "actor_learner" in answer
    runs = pd.DataFrame({"sweep": ["smoke", "smoke", "architectures"], "design": ["single_env", "hogwild", "x"],
                         "learning_env_steps_per_sec": [1_000.0, 1_500.0, 9.0]})  # the page's speed: once learning
    smoke = page._smoke_section(RunSet(runs, pd.DataFrame(), pd.DataFrame()))
    assert "smoke check" in smoke and "nothing about learning" in smoke
    assert "1,000" in smoke and "1,500" in smoke and ">x<" not in smoke
    assert page._smoke_section(RunSet(runs.iloc[2:], pd.DataFrame(), pd.DataFrame())) == ""


def test_sections_with_nothing_to_show_are_one_line_and_every_note_stays_on_the_page(tmp_path, capsys):
    from analysis.report.framework.common import Report

    report = Report(str(tmp_path))
    report.note("apex: no runs of the `apex_epsilons` sweep; run `python -m experiments.sweep apex_epsilons`")
    report.note("hogwild: no runs of the `hogwild` sweep; run `python -m experiments.sweep hogwild`")
    report.note("apex: no runs of ... said twice")
    report.note("provenance: 3 runs from a tree with uncommitted changes")
    printed = capsys.readouterr().err.splitlines()
    assert printed == ["report: provenance: 3 runs from a tree with uncommitted changes"]
    assert len(report.notes) == 4  # the page lists them all, with their commands
    assert report.empty_line() == ("report: nothing to show here for 2 sections (apex, hogwild): the page's notes "
                                   "name the sweep that makes each")
    assert Report(str(tmp_path)).empty_line() == ""
