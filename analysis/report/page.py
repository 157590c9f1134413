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

from analysis.report.common import committed

PAGE = "index.html"

FIGURE_TEXT = {
    "threads": (
        "Time per gradient step against torch intra-op threads, per network and batch size.",
        "Do more torch threads make one gradient step of a small Q-network faster? Each line is one network "
        "and batch size, timed alone: a line that falls to the right gains from threads, one that rises loses. "
        "The CartPole MLP at batch 32 took {ThreadsCartpoleMlpBatchThreeTwoOneUs} µs a step on one thread "
        "and {ThreadsCartpoleMlpBatchThreeTwoMostUs} µs on {ThreadsMost} threads."),
    "scaling": (
        "Env steps per second against workers (top) and parallel efficiency (bottom), at a free and a "
        "1 ms env step (median over seeds per cell), with ideal linear scaling and the cost model's "
        "prediction (dashed) from the components the same sweep measured.",
        "Does moving work into worker processes make a run faster, and how far does it scale? A design "
        "above single_env's line is faster at that worker count, and the dashed lines show how well the "
        "cost model predicted each cell. At a free env step single_env made {ScalingSingleCostZero} env "
        "steps/s, and with 2 workers hogwild ran {SpeedupHogwildTwoCostZero}x and actor_learner "
        "{SpeedupActorLearnerTwoCostZero}x as fast."),
    "learning_curves": (
        "Holdout return against env steps (left) and a wall-clock axis (right), IQM over seeds with 95% "
        "stratified-bootstrap bands; where runs went several at a time, the wall-clock axis divides their "
        "env steps by the speed of the same design's runs made alone.",
        "Do the parallel designs learn as well per env step, and sooner per second? Curves that overlap "
        "on the left learn alike per env step; on the right, a curve further left got there sooner. The "
        "final holdout IQM on CartPole was {CartPoleSingleEnvFinal} for single_env and "
        "{CartPoleActorLearnerFinal} for actor_learner."),
    "speed_quality": (
        "Speed against quality: each design's median env steps/s once learning has started (from runs made "
        "alone: which, below) and IQM of the headline runs' mean holdout return over checkpoints, with 95% "
        "intervals; the dashed line joins the point estimates no other design beats on both (not a test: their "
        "intervals may overlap).",
        "Which design is both fast and learns well? Right is faster and up learns better; a design on "
        "the line is beaten by no other's point estimate on both. On CartPole single_env made {CartPoleSingleEnvSteps} "
        "env steps/s once learning and actor_learner {CartPoleActorLearnerSteps}."),
    "time_breakdown": (
        "Share of training wall-clock time per component, for the main process (the learner) and for "
        "each worker; * marks the role named as the bottleneck.",
        "Where does a run's time go, and which role bounds it? Each bar splits one role's training time "
        "into its components; the starred role is the bottleneck, the one to make cheaper first."),
    "policy_lag_shares": (
        "Policy lag of sampled transitions, age of acting weights at hand-off, and each worker's share of "
        "env steps and sampled transitions (times the number of workers: 1 is an equal share).",
        "Do workers hand the learner stale data, and does any worker crowd the others out? The lag and "
        "the age say how old the sampled data and the acting weights were; a share of 1 means a worker "
        "gave exactly its equal part."),
    "utd_grid": (
        "high_utd on CartPole: return at 25k and 50k env steps and the share of runs that diverged, per "
        "updates per env step (utd) and mitigation (IQM over seeds).",
        "Do many updates per env step learn faster, and what keeps the Q-values from diverging? Compare "
        "each mitigation's returns and diverged share along the utd axis. At utd 16, "
        "{UtdSixteenNoneDiverged} of the runs diverged without a mitigation and "
        "{UtdSixteenLayerNormDiverged} with LayerNorm."),
    "utd_long": (
        "CartPole to {UtdLongBudget} env steps, the utd sweep's long cells: each seed's holdout return (thin) "
        "and the median over seeds (thick), for single_env, high_utd at utd 4 with LayerNorm, and that with "
        "last-layer or full-network resets.",
        "Does high_utd keep CartPole once it has solved it, and do resets help it keep it? A cell whose thick "
        "line stays at 500 keeps it. Without resets, {UtdLongNoneFell} of {UtdLongNoneReached} seeds fell below "
        "475 after first reaching 500; with last-layer resets {UtdLongLastFell} of {UtdLongLastReached}, with "
        "full-network resets {UtdLongAllFell} of {UtdLongAllReached}."),
    "hogwild": (
        "Hogwild with and without the lock: left, each run's share of optimizer steps that overlapped "
        "another worker's write against its final return; middle, the mean holdout return over "
        "checkpoints; right, the final return.",
        "Do hogwild's lock-free workers overwrite each other's updates, and does that cost learning? The "
        "left panel shows how often writes overlapped, the others whether the lock-free runs learned "
        "worse than the locked ones or single_env. Without the lock "
        "{HogHogwildNoLockOverlapMin}-{HogHogwildNoLockOverlapMax}% of optimizer steps overlapped "
        "another worker's write."),
    "uneven": (
        "One slow worker (+1 ms per env step) among two: throughput, the slow worker's share of env "
        "steps, replay and sampled batches (times 2: 1 is an equal share), the age of each actor's acting "
        "weights at hand-off, and holdout return at equal env steps (IQM, 95% CI).",
        "When one worker is slower, does the fast one crowd out its data, and does that cost learning? "
        "Compare actor_learner with equal quotas and with free-running actors: a share below 1 is the "
        "slow worker's data crowded out. Running free, the slow actor gave "
        "{UnevenActorLearnerTwoFreeQuotasSlowShareEnvSteps} times an equal share of the env steps."),
    "improvement": (
        "Probability of improvement over single_env (Mann-Whitney), with 95% stratified-bootstrap "
        "intervals; speeds only from runs made one at a time.",
        "How likely is a run of each design to beat a single_env run? 0.5 means no difference; an "
        "interval that holds 0.5 means the seeds cannot tell the two apart. On CartPole an actor_learner "
        "run beat a single_env run on the mean holdout return with probability "
        "{PoiCartPoleActorLearnerHoldoutAuc}."),
    "practitioner_shape": (
        "The practitioner's shape (an env step that waits): env steps/s against workers (median over "
        "seeds, min-max bars), the cost model's prediction written before the runs (dashed), and the "
        "practitioner's reported curve (black).",
        "With an env that waits, how many actors pay, and does the learner or the hand-off become the "
        "bottleneck? A curve rises while its workers bound the run and flattens or falls where the "
        "learner or the cores do. single_env made {ShapeSingleEnv} env steps/s and actor_learner peaked "
        "at {ShapeActorLearnerBest} with {ShapeActorLearnerBestWorkers} actors."),
    "practitioner_shape_check": (
        "The second check of the practitioner's shape: env steps/s against workers, with the mended cost "
        "model's prediction written before the runs (dashed).",
        "Does the mended cost model predict a new sweep of the same shape without refitting? Where the "
        "dashed line meets the measured points, it did. {ShapeCheckCellsWithinTwenty} of "
        "{ShapeCheckCells} cells came within 20% of the prediction."),
    "practitioner_shape_confirm": (
        "The third check of the practitioner's shape: plan's recommendation, its runner-up and new worker "
        "counts, against the prediction written before the runs (dashed).",
        "Does pricing each role's CPU past the cores predict the point plan recommends? Compare the "
        "recommended point's measured speed with its dashed prediction. {ShapeConfirmRecommended} "
        "measured {ShapeConfirmRecommendedMeasured} env steps/s against {ShapeConfirmRecommendedPredicted} "
        "predicted; {ShapeConfirmCellsWithinTwenty} of {ShapeConfirmCells} cells came within 20%."),
    "sixteen_cores_shape": (
        "The practitioner's shape on 16 real cores (an env step burning 2.2 ms of CPU, one run at a time): env "
        "steps/s against workers (median, min-max bars over 1-3 runs), each point labelled with the bound its "
        "runs' own breakdown names, beside the practitioner's reported curve (black) and the 2-core emulation "
        "with an env that waits (dotted).",
        "Does moving env stepping into workers pay on a machine with many cores, and what bounds it? A curve "
        "rises while its workers bound it and flattens where the learner does. single_env made "
        "{SixteenSingleEnv} env steps/s; actor_learner made {SixteenActorLearnerOneTwo} at 12 actors "
        "({SixteenActorLearnerOneTwoGain}x, where the practitioner got {SixteenPractitionerGain}x) and "
        "{SixteenActorLearnerOneSix} at 16, where its learner bounds it."),
    "per_hour": (
        "Learning per second of training on an env whose step waits: holdout return at the last "
        "checkpoint each run had reached by then (IQM over seeds, 95% stratified-bootstrap band), "
        "evaluation off the clock, each run alone.",
        "Does the faster run learn as well per second of training? A curve above single_env's reached a "
        "higher return in the same training time. At {PerHourWindow} s single_env had reached a holdout "
        "IQM of {PerHourSingleEnvIqm} and actor_learner {PerHourActorLearnerIqm}."),
    "minatar_suite": (
        "The MinAtar suite across games, on returns divided by each game's anchor (Young & Tian's DQN): "
        "left, the aggregate IQM over games x seeds with 95% intervals; middle, performance profiles; "
        "right, P(design > single_env) over game-seed pairs.",
        "Does what Breakout showed hold on more games? Each design is set against single_env across every "
        "complete game at once: a point left of single_env's, or a probability below 0.5, learned less. "
        "Over {MinatarAggGames} complete games an actor_learner run beat a single_env run on the final "
        "return with probability {MinatarAggActorLearnerFinalPoi}."),
}
"""Figure file name -> (caption, answer): the question the figure answers and how it shows it.
`{Macro}` takes report.macros[Macro]; a sentence naming a macro the report lacks is left out."""

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
    frame = runs.rename(columns={"architecture": "design", "num_workers": "workers"})
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
    """This machine's smoke speeds beside the reference machine's: a check that the designs run and
    how fast here, labelled as saying nothing about learning."""
    here = runset.runs[runset.runs["sweep"] == "smoke"]
    if here.empty:
        return ""
    ref = pd.DataFrame()
    if os.path.isdir(REFERENCE_SMOKE):
        from analysis.load import load_runs

        ref = load_runs([REFERENCE_SMOKE]).runs
    rows = []
    for arch, group in here.groupby("architecture", sort=False):
        mine = float(group["env_steps_per_sec"].median())
        theirs = ref.loc[ref["architecture"] == arch, "env_steps_per_sec"] if len(ref) else pd.Series(dtype=float)
        rows.append({"design": arch, "env steps/s here": f"{mine:,.0f}",
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
