"""5 and 6: where the time goes and how stale the data is. The time breakdown gives each role's
(main process, each actor or worker) share of training time per component, with the bottleneck
role the run named; policy lag and shares give the age of sampled transitions and acting weights
in learner updates, and each worker's share of the data."""

from __future__ import annotations

import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.common import (DEDICATED_SWEEPS, FigureData, Note, headline, sweep_runs, env_first, headline_runs,
                                              macro_name)


# ---------------------------------------------------------------------- 5. time breakdown
def _shares_of_time(result: dict, train_seconds: float) -> list[tuple[str, str, float]]:
    out = []
    main = {k: v["seconds"] for k, v in (result.get("time_breakdown") or {}).items() if k not in ("eval", "checkpoint")}
    for name, seconds in main.items():
        out.append(("main process", name, seconds / train_seconds))
    for key, role in (("actor_time_breakdown", "each actor"), ("worker_time_breakdown", "each worker")):
        for name, row in (result.get(key) or {}).items():
            seconds = row.get("seconds_per_actor", row.get("seconds_per_worker", 0.0))
            out.append((role, name, seconds / train_seconds))
    return out


def time_data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, "scaling")
    if runs.empty:
        runs = headline(rs.runs)
    if runs.empty:
        note("time breakdown: no runs of the `scaling` or `architectures` sweeps")
        return None
    rows = []
    for _, run in runs.iterrows():
        for role, component, share in _shares_of_time(run["result"], run["train_seconds"]):
            if role == "main process" and run["design"] == "hogwild":
                continue
            rows.append({"env": run["env"], "env_step_cost_us": float(run["env_step_cost_us"] or 0.0),
                         "design": run["design"],
                         "num_workers": int(run["num_workers"]), "role": role, "component": component,
                         "share_of_train_time": share, "run_id": run["run_id"],
                         # the role alone: the summary's busy percentage differs from seed to seed
                         "bottleneck": run["bottleneck"].split(" ")[0] if isinstance(run["bottleneck"], str) else ""})
    # One panel per env and env step cost (CartPole's and MinAtar's scaling cells are never
    # pooled); per cell and role, each component's MEAN share over the cell's runs, so the shares
    # add up as each run's do (at most 1); the named bound is the one most of its runs named.
    # Grouped by the whole bottleneck text, the cells had stacked two or three seed groups each
    # (totals of 1.5-2.9; tests/test_report_data.py::test_time_shares_of_a_cell_sum_to_at_most_one).
    frame = pd.DataFrame(rows)
    cell = ["env", "env_step_cost_us", "design", "num_workers"]
    runs_per_cell = frame.groupby(cell)["run_id"].nunique()
    bound = frame.drop_duplicates("run_id").groupby(cell)["bottleneck"].agg(lambda v: v.mode().iloc[0])
    data = frame.groupby(cell + ["role", "component"], as_index=False)["share_of_train_time"].sum()
    data["share_of_train_time"] /= data.set_index(cell).index.map(runs_per_cell).to_numpy()
    data["bottleneck"] = data.set_index(cell).index.map(bound).to_numpy()
    data = (data.assign(first=data["env"].map(env_first))
            .sort_values(["first", "env_step_cost_us", "design", "num_workers", "role", "component"],
                         ignore_index=True).drop(columns="first"))
    made = FigureData(data)
    # single_env's update as a share of its training time at a free env step, per env: how much the
    # learner weighs (Breakdown<Env>SingleEnvUpdateShare, percent)
    update = data[(data["design"] == "single_env") & (data["env_step_cost_us"] == 0)
                  & (data["role"] == "main process") & (data["component"] == "update")]
    for r in update.itertuples():
        made.number(macro_name("breakdown", r.env, "single_env", "update", "share"), 100 * r.share_of_train_time,
                    "{:.0f}")
    return made


def plot_time(report, made: FigureData) -> None:
    """The components summed into eight groups (a legend of 17 near-alike reds could not be read),
    single_env and each design at one and two workers, one panel a setting, at the text's width."""
    from analysis.report.framework.plotting import TEXT_WIDTH_IN, GROUP_COLORS, component_group, plt

    data = made.data[made.data["num_workers"].fillna(1) <= 2].assign(group=lambda d: d["component"].map(component_group))
    panels = list(dict.fromkeys(zip(data["env"], data["env_step_cost_us"])))  # CartPole's first, as sorted
    groups = [g for g in GROUP_COLORS if g in set(data["group"])]
    bars = sorted(data.groupby(["design", "num_workers", "role"]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(TEXT_WIDTH_IN, 0.14 * len(bars) + 1.3), squeeze=False,
                             sharey=True)
    for ax, (env, cost) in zip(axes[0], panels):
        part = data[(data["env"] == env) & (data["env_step_cost_us"] == cost)]
        labels = []
        for y, key in enumerate(bars):
            bar = part[(part["design"] == key[0]) & (part["num_workers"] == key[1]) & (part["role"] == key[2])]
            left = 0.0
            for group in groups:
                share = float(bar.loc[bar["group"] == group, "share_of_train_time"].sum())
                ax.barh(y, share, left=left, color=GROUP_COLORS[group], height=0.8)
                left += share
            bottleneck = bar["bottleneck"].iloc[0] if not bar.empty else ""
            starred = (bottleneck.startswith(("learner", "main")) if key[2] == "main process"
                       else bottleneck.startswith(("actor", "worker")))
            ax.text(min(left, 1.0) + 0.01, y, "*" if starred else "", va="center", fontsize=7)
            labels.append(f"{key[0]} ({key[1]}) {'main' if key[2] == 'main process' else key[2]}")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.set_xlabel("share of training time")
        ax.set_xlim(0, 1.1)
        ax.set_title(f"{env}, env step {cost / 1000:g} ms")
    handles = [plt.Rectangle((0, 0), 1, 1, color=GROUP_COLORS[g]) for g in groups]
    fig.legend(handles, groups, loc="lower center", ncol=len(groups), bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    report.figure(fig, "time_breakdown", made.data)


# ---------------------------------------------------------------------- 6. policy lag and shares
def _configs(frame: pd.DataFrame) -> pd.Series:
    """'arch (n)', prefixed with the env where it is not CartPole: envs are never pooled."""
    prefix = frame["env"].where(frame["env"] != "CartPole", "").map(lambda env: f"{env}: " if env else "")
    return prefix + frame["design"] + " (" + frame["num_workers"].astype(str) + ")"


def _config_order(configs) -> list[str]:
    """CartPole's configs first, then each env's; within one, by design and then by worker count
    (2 before 16)."""
    def key(config: str):
        env, _, rest = config.rpartition(": ")
        arch, _, workers = rest.rpartition(" (")
        workers = workers.rstrip(")")
        return env, arch, int(workers) if workers.isdigit() else 0

    return sorted(set(configs), key=key)


LAG_ALSO_FROM = {"scaling", "utd", "hogwild", "pqn"}
"""Dedicated sweeps whose runs the lag figure still reads: scaling's actor_learner and vector_env runs
at 1-N workers are where lag grows, and the others record none. Every other dedicated sweep (a new one
too) has a figure of its own and stays out."""


def lag_data(rs: RunSet, note: Note) -> FigureData | None:
    """policy_lag_shares.csv, both frames stacked; in parts `lag` and `shares` apart, as drawn."""
    runs = rs.runs[rs.runs["result"].apply(lambda r: isinstance(r.get("policy_lag"), dict))
                   & ~rs.runs["sweep"].isin(DEDICATED_SWEEPS - LAG_ALSO_FROM)
                   & (rs.runs["sweep"] != "smoke")]  # the main job's tiny runs: a check that it runs, not data
    if runs.empty:
        note("policy lag: no runs recorded it (actor_learner, vector_env)")
        return None
    lag_rows, share_rows = [], []
    for _, run in runs.iterrows():
        result = run["result"]
        for what in ("policy_lag", "acting_staleness"):
            for stat_name, value in (result.get(what) or {}).items():
                lag_rows.append({"run_id": run["run_id"], "env": run["env"], "design": run["design"],
                                 "num_workers": int(run["num_workers"]), "env_step_cost_us": run["env_step_cost_us"],
                                 "measure": what, "statistic": stat_name, "updates": value})
        for kind, values in (result.get("worker_shares") or {}).items():
            for worker, share in enumerate(values):
                share_rows.append({"run_id": run["run_id"], "env": run["env"], "design": run["design"],
                                   "num_workers": int(run["num_workers"]), "kind": kind, "worker": worker,
                                   "share": share})
    lag = pd.DataFrame(lag_rows)
    shares = pd.DataFrame(share_rows)
    data = pd.concat([lag.assign(table="lag"), shares.assign(table="shares")], ignore_index=True)
    data = data.sort_values(["table", "run_id"] + [c for c in ("measure", "statistic", "kind", "worker")
                                                   if c in data], ignore_index=True, kind="stable")
    made = FigureData(data, parts={"lag": lag, "shares": shares})
    counts = runs.groupby("sweep")["run_id"].nunique()
    made.number("LagSweeps", ", ".join(f"{sweep} ({n})" for sweep, n in counts.items()))  # the caption names its runs
    # how old an actor_learner actor's weights were at hand-off in the headline runs, per env: the
    # median over runs of each run's mean (Lag<Env>ActorLearnerStaleness, learner updates)
    if not lag.empty:
        stale = lag[(lag["measure"] == "acting_staleness") & (lag["statistic"] == "mean")
                    & (lag["design"] == "actor_learner") & lag["run_id"].isin(headline_runs(rs.runs)["run_id"])]
        for env, part in stale.groupby("env"):
            made.number(macro_name("lag", env, "actor_learner", "staleness"), part["updates"].median(), "{:.0f}")
    return made


def plot_lag(report, made: FigureData) -> None:
    """Three panels side by side, one row a config, the configs named once at the left: twenty
    configs' labels fit at 7 pt only across, not slanted under three narrow panels."""
    from analysis.report.framework.plotting import TEXT_WIDTH_IN, plt, sns

    lag, shares = made.parts["lag"], made.parts["shares"]
    if not lag.empty:
        lag = lag[lag["statistic"].isin(["p50", "p95", "max"])].assign(config=_configs(lag))
    if not shares.empty:
        shares = shares[shares["kind"].isin(["env_steps", "sampled"])]
        shares = shares.assign(config=_configs(shares), deviation=shares["share"] * shares["num_workers"])
    order = _config_order(list(lag.get("config", [])) + list(shares.get("config", [])))
    fig, axes = plt.subplots(1, 3, figsize=(TEXT_WIDTH_IN, 1.6 + 0.15 * len(order)), sharey=True,
                             layout="constrained")
    for ax, measure in zip(axes[:2], ("policy_lag", "acting_staleness")):
        part = lag[lag["measure"] == measure] if not lag.empty else lag
        if not part.empty:
            sns.stripplot(data=part, x="updates", y="config", hue="statistic", ax=ax, dodge=True, size=3,
                          order=order, hue_order=["p50", "p95", "max"], orient="h")
            ax.set_xscale("symlog", linthresh=10)
            ax.set_xlim(0, 2 * part["updates"].max())  # room on the log scale for the largest points
        ax.set_title({"policy_lag": "sampled transitions' age\n(learner updates, replay included)",
                      "acting_staleness": "acting weights' age\nat hand-off (updates)"}[measure], pad=16)
        ax.set_xlabel("learner updates")
    ax = axes[2]
    if not shares.empty:
        sns.stripplot(data=shares, x="deviation", y="config", hue="kind", ax=ax, dodge=True, size=3, order=order,
                      orient="h")
        ax.axvline(1.0, color="k", ls="--", lw=1)
    ax.set_title("per-worker share x workers\n(1 = an equal share)", pad=16)
    ax.set_xlabel("share x workers")
    for ax in axes:
        ax.set_ylabel("")
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
        if ax.get_legend() is not None:  # the key between the title and the points, none of them hidden
            sns.move_legend(ax, "lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, title=None, frameon=False,
                            handletextpad=0.1, columnspacing=0.8, borderaxespad=0.2)
    axes[0].set_ylabel("design (workers)")
    report.figure(fig, "policy_lag_shares", data=made.data)

