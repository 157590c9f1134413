"""Two tables of the headline runs beside its figures: the hyperparameters as the runs stored them,
and whether each design kept what it learned once it had solved the task."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.claims import CAP, SOLVED_AT, after_solving
from analysis.report.framework.common import ARCH_ORDER, FigureData, Note, arch_label, env_first, macro_name, runs_read
from analysis.report.learning.curves import headline_rows, slug

# ---------------------------------------------------------------------- hyperparameters
HYPERPARAMETERS = [("hidden_sizes", "hidden layers (an MLP; MinAtar: one 3x3 conv, 16 channels, then these)"),
                   ("batch_size", "batch size"), ("buffer_size", "replay capacity"), ("lr", "learning rate (Adam)"),
                   ("adam_eps", "Adam epsilon"), ("gamma", "discount"), ("n_step", "n-step return"),
                   ("double_dqn", "double DQN"), ("loss", "loss"), ("max_grad_norm", "gradient-norm clip"),
                   ("utd", "updates per env step"), ("target_update_period", "target network update (updates)"),
                   ("learning_starts", "env steps before learning"), ("eps_start", "epsilon start"),
                   ("eps_end", "epsilon end"), ("eps_decay_steps", "epsilon decay (env steps)"),
                   ("total_env_steps", "env steps per run"), ("eval_every", "holdout every (env steps)"),
                   ("eval_episodes", "holdout episodes"), ("eval_epsilon", "holdout epsilon")]
"""The learner's and the schedule's settings the headline shares across designs, in table order."""
DESIGN_KEYS = ("design", "num_workers", "utd", "layer_norm")
"""What a design may set apart from the shared values (high_utd: its utd and LayerNorm)."""


def hyperparameters_data(rs: RunSet, note: Note) -> FigureData | None:
    """The headline's hyperparameters, per env, read from the stored runs' configs (so the table is
    what ran, not what a config file says now): single_env's values, and a note where another
    design's runs differ in a shared key beyond DESIGN_KEYS (tests/test_report_data.py)."""
    runs = headline_rows(rs)
    if runs.empty or "config" not in runs:
        note("hyperparameters: no headline runs")
        return None
    columns, seeds = {}, {}
    for env, part in sorted(runs.groupby("env"), key=lambda kv: env_first(kv[0])):
        base = part[part["design"] == "single_env"]
        if base.empty:
            continue
        reference = base.iloc[0]["config"]
        for _, run in part.iterrows():
            differs = [key for key, _ in HYPERPARAMETERS
                       if key not in DESIGN_KEYS and run["config"].get(key) != reference.get(key)]
            if differs:
                note(f"hyperparameters: {env} run {run['run_id']} ({run['design']}) differs from single_env in "
                     + ", ".join(differs))
        columns[env] = [_setting(reference.get(key)) for key, _ in HYPERPARAMETERS]
        seeds[env] = (int(part["seed"].min()), int(part["seed"].max()))
    if not columns:
        note("hyperparameters: no single_env run in the headline")
        return None
    table = pd.DataFrame({"setting": [label for _, label in HYPERPARAMETERS], **columns})
    made = FigureData(table)
    # The same values as macros, Setting<Env><Key> (SettingCartPoleBatchSize), and each env's
    # evaluation seeds (<Env>SeedsFirst, ...Last): the text quotes what ran, not what it remembers.
    for env, values in columns.items():
        for (key, _), value in zip(HYPERPARAMETERS, values):
            made.number(macro_name("setting", env, key), value)
        made.number(macro_name(env, "seeds", "first"), seeds[env][0], "{:d}")
        made.number(macro_name(env, "seeds", "last"), seeds[env][1], "{:d}")
    # the parallel designs' own settings, as actor_learner's runs stored them (never tuned: the text says so)
    actors = runs[runs["design"] == "actor_learner"]
    for key in ("weight_sync_period", "actor_epsilons", "actor_quotas", "prioritized"):
        values = actors["config"].map(lambda c: c.get(key)).dropna()
        if not values.empty:
            made.number(macro_name("setting", key), _setting(values.mode().tolist()[0]))
    made.table("hyperparameters", table,
               f"The headline's settings as its runs stored them ({runs_read(runs)}; single_env's values: every design "
               "shares them but for its "
               "workers, and high_utd's updates per env step and LayerNorm). MinAtar Breakout's are the values chosen "
               "on calibration seeds; CartPole's the cartpole config")
    return made


def _setting(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return "-".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    return "-" if value is None else str(value)


# ---------------------------------------------------------------------- stability after solving
def stability_data(rs: RunSet, note: Note) -> FigureData | None:
    """Does a design keep what it learned? For every headline run of an env with a cap: whether it
    reached the cap at a holdout checkpoint, whether it fell below the solved threshold at a later
    one, the share of its checkpoints after the first at the cap that were below it, and its drop
    (the cap less its lowest return after). On CartPole at 100k, high_utd (utd 4, LayerNorm) reached
    500 and then fell below 475 in every seed while the other designs rarely did; the text had
    said only that it 'ends less often at the cap' (tests/test_report_data.py)."""
    runs = headline_rows(rs)
    runs = runs[runs["env"].isin(list(CAP))]
    if runs.empty:
        note("stability: no headline runs of an env with a known cap (CartPole)")
        return None
    rows = []
    for (env, arch), group in runs.groupby(["env", "design"], sort=True):
        rows.append({"env": env, "design": arch, "label": arch_label(group.iloc[0]), "seeds": len(group),
                     **after_solving(rs.holdout, group["run_id"], CAP[env], SOLVED_AT[env])})
    data = pd.DataFrame(rows)
    data["order"] = data["design"].map(ARCH_ORDER.index)
    data = data.sort_values(["env", "order"], ignore_index=True).drop(columns="order")
    made = FigureData(data)
    for env, part in data.groupby("env", sort=True):
        cap, solved = CAP[env], SOLVED_AT[env]
        table = pd.DataFrame({
            "design": part["label"], "seeds": part["seeds"],
            f"reached {cap:.0f}": part["reached_cap"],
            f"then fell below {solved:.0f}": [f"{f} of {r}" for f, r in zip(part["fell_below_solved"],
                                                                              part["reached_cap"])],
            f"checkpoints below {solved:.0f} after the first {cap:.0f}": part["share_below_after_cap"].map(
                lambda v: "-" if not np.isfinite(v) else f"{100 * v:.0f}%"),
            "drop from the cap, median over seeds": part["median_drop"].map(
                lambda v: "-" if not np.isfinite(v) else f"{v:.0f}")})
        made.table(f"stability_{slug(env)}", table,
                   f"{env}, the headline runs ({runs_read(runs[runs['env'] == env])}): the seeds whose holdout return "
                   f"reached {cap:.0f} at a checkpoint, "
                   f"how many of them fell below {solved:.0f} at a later checkpoint, the share of their checkpoints "
                   f"after the first at {cap:.0f} that were below {solved:.0f}, and the median over those seeds of "
                   f"{cap:.0f} less the lowest return after it")
    for r in data.itertuples():
        made.number(macro_name("stability", r.env, r.design, "reached"), r.reached_cap, "{:d}")
        made.number(macro_name("stability", r.env, r.design, "fell"), r.fell_below_solved, "{:d}")
        made.number(macro_name("stability", r.env, r.design, "below"),
                    100 * r.share_below_after_cap if np.isfinite(r.share_below_after_cap) else "-", "{:.0f}")
        made.number(macro_name("stability", r.env, r.design, "drop"),
                    r.median_drop if np.isfinite(r.median_drop) else "-", "{:.0f}")
    return made
