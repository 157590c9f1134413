"""Stored Sacred runs -> tidy pandas frames. Reads stores only; never imports `architectures/`.

Sources: FileStorageObserver folders (any folder holding `<run id>/run.json`, searched
recursively) or a MongoDB database (`mongodb://host:port/db`, Sacred's `runs` and `metrics`
collections). Three frames come out:

- `runs`: one row per COMPLETED run: run id, sweep, experiment, design, workers, utd,
  seed, env, the config keys that tell runs apart, result scalars, hardware, and
  `learning_env_steps_per_sec` (env steps/s once learning has started: see learning_rate);
- `metrics`: one row per logged scalar: run id, design, workers, utd, seed, env, metric,
  env step, wall time (seconds since the run started), value;
- `holdout`: one row per holdout checkpoint: run id, env step, mean return, and the training
  seconds (evaluation excluded) at that checkpoint where the run recorded them.

Runs that cannot be used (not COMPLETED, unreadable, COMPLETED with no result) are left out
with one line each in `problems`, naming the run, so one bad run never stops a report.

Reading the stores themselves (folders, MongoDB, the unique run ids) is in analysis/io/stores.py."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from analysis.io.stores import (MACHINE_FILE, SKIP_FOLDERS, Document, NoRunsError, file_documents,  # noqa: F401
                                mongo_documents, name_runs, find_run_dirs, machine_of, shown)
from architectures.core.atomic import atomic_write

KEY_COLUMNS = ["run_id", "sweep", "design", "num_workers", "utd", "seed", "env"]
"""Identify a run in every frame."""
CONFIG_COLUMNS = ["env_id", "total_env_steps", "learning_starts", "eval_every", "layer_norm", "reset_period",
                  "hogwild_lock", "optimizer_state", "hogwild_replay", "backend", "env_step_cost_us", "prioritized",
                  "actor_epsilons", "weight_sync_period", "torch_threads", "network", "batch_size", "device",
                  "slow_worker_cost_us", "actor_quotas", "n_step", "lr", "target_update_period"]
"""Config keys copied into `runs` (the ones sweeps vary)."""
RESULT_COLUMNS = ["env_steps_per_sec", "updates_per_sec", "train_seconds", "final_holdout_return", "realised_utd",
                  "updates", "episodes", "diverged", "max_abs_q", "overlap_fraction", "mean_version_gap",
                  "update_us_median", "update_us_p10", "update_us_p90", "threads_in_effect",
                  "shared_adam_steps", "runs_at_once", "diverged_at_update", "diverged_reason",
                  "diverged_at_env_steps"]
"""Result scalars copied into `runs`; nested results stay in the `result` column."""
LEARNING_RATE = "learning_env_steps_per_sec"
"""The `runs` column derived from each run's log: env steps/s once learning (learning_rate)."""
TRAINING_EXPERIMENTS = ("parallel_dqn", "")
"""experiments/train.py's Sacred name (and none, for runs stored without one)."""


@dataclass
class RunSet:
    runs: pd.DataFrame
    metrics: pd.DataFrame
    holdout: pd.DataFrame
    problems: list[str] = field(default_factory=list)

    def on_machine(self, machine: str = "") -> "RunSet":
        """The runs made on `machine` ("": this suite's own machine, whose sweeps the figures read)."""
        keep = self.runs["machine"] == machine
        ids = set(self.runs.loc[keep, "run_id"])
        def pick(frame: pd.DataFrame) -> pd.DataFrame:
            return frame[frame["run_id"].isin(ids)] if "run_id" in frame else frame

        return RunSet(self.runs[keep].reset_index(drop=True), pick(self.metrics), pick(self.holdout), self.problems)


# ---------------------------------------------------------------------- frames
def learning_rate(result: dict, config: dict, metrics: dict) -> float:
    """env steps/s from the first logged env step at or after `learning_starts` to the end of the
    run: the rate a long run sees. A run's own `env_steps_per_sec` averages its warm-up in (no
    updates, so fast), which overstates a short run's speed: MinAtar's 5k warm-up is a quarter of
    a 20k-step scaling run and three quarters of a 6,666-step high_utd one (1,266 env steps/s over
    the run, 331 once learning). The log's `env_steps_per_sec` is cumulative over training seconds,
    so env step s logged at rate r was reached at s / r seconds. NaN where no log falls in
    [learning_starts, end) (tests/test_analysis.py::test_the_learning_rate_leaves_the_warm_up_out)."""
    series = metrics.get("env_steps_per_sec") or {}
    steps, seconds = result.get("env_steps"), result.get("train_seconds")
    start = config.get("learning_starts") or 0
    if not steps or not seconds:
        return float("nan")
    for step, rate in zip(series.get("steps", []), series.get("values", [])):
        if start <= step < steps and rate > 0:
            return (steps - step) / (seconds - step / rate)
    return float("nan")


def _env_name(env_id: str | None) -> str:
    if not env_id:
        return ""
    return env_id.split("/")[-1].replace("-v1", "").replace("-v0", "")


def _seconds(stamp) -> float | None:
    if isinstance(stamp, datetime):
        return stamp.timestamp()
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            return None
    return None


def _frames(documents: list[Document], problems: list[str]) -> RunSet:
    run_rows, metric_rows, holdout_rows = [], [], []
    for run_id, where, run, config, metrics, _, sacred_id in name_runs(documents, problems):
        status = run.get("status")
        result = run.get("result")
        if status != "COMPLETED":
            problems.append(f"run {run_id} ({shown(where)}): status {status}; left out")
            continue
        if not isinstance(result, dict):
            problems.append(f"run {run_id} ({shown(where)}): COMPLETED but has no result; left out")
            continue
        experiment = (run.get("experiment") or {}).get("name", "")
        host = run.get("host") or {}
        machine = machine_of(where)
        sweep = sacred_id.rsplit("-", 1)[0] if "-" in sacred_id else ""
        keys = {
            "run_id": run_id,
            "sweep": f"{machine}/{sweep}" if machine else sweep,
            # A training run's design (records before the key was `design` say `architecture`); any
            # other experiment's runs go by its name.
            "design": (config.get("design") or config.get("architecture") or result.get("design")
                             or result.get("architecture") or experiment)
            if experiment in TRAINING_EXPERIMENTS else experiment,
            "num_workers": int(config.get("num_workers", 1)),
            "utd": float(config.get("utd", float("nan"))),
            "seed": int(config.get("seed", 0)),
            "env": _env_name(config.get("env_id")),
        }
        row = dict(keys, experiment=experiment, source=where, machine=machine,
                   overrides=(run.get("meta") or {}).get("comment") or "")  # a sweep's `with ...`
        row.update({key: config.get(key) for key in CONFIG_COLUMNS})
        row.update({key: result.get(key) for key in RESULT_COLUMNS})
        row[LEARNING_RATE] = learning_rate(result, config, metrics)
        bottleneck = result.get("bottleneck")
        row["bottleneck"] = bottleneck.get("summary") if isinstance(bottleneck, dict) else None
        row["cpu_model"] = host.get("cpu_model") or host.get("cpu")
        row["cpu_count"] = host.get("cpu_count")
        row["git_commit"] = (host.get("git") or {}).get("commit") or (run.get("meta") or {}).get("git_commit")
        row["git_dirty"] = (host.get("git") or {}).get("dirty")  # None: a record that does not say
        row["result"] = result
        row["config"] = dict(config)  # every key, for the hyperparameter table
        run_rows.append(row)

        started = _seconds(run.get("start_time"))
        for name, series in sorted(metrics.items()):
            stamps = series.get("timestamps") or [None] * len(series["steps"])
            for step, value, stamp in zip(series["steps"], series["values"], stamps):
                moment = _seconds(stamp)
                wall = moment - started if moment is not None and started is not None else float("nan")
                metric_rows.append(dict(keys, metric=name, env_step=int(step), wall_time=wall, value=float(value)))
        curve = result.get("holdout_curve") or []
        seconds = result.get("checkpoint_train_seconds") or [None] * len(curve)
        for point, at in zip(curve, seconds):
            at = point.get("train_seconds", at)
            holdout_rows.append(dict(keys, env_step=int(point["env_steps"]), return_mean=float(point["return_mean"]),
                                     train_seconds=float("nan") if at is None else float(at)))
        if experiment in TRAINING_EXPERIMENTS and config.get("eval_episodes", 1) and not result.get("holdout_curve"):
            problems.append(f"run {run_id} ({where}): no holdout checkpoints stored; left out of learning curves")

    runs = pd.DataFrame(run_rows, columns=KEY_COLUMNS + ["experiment", "source", "machine", "overrides"] + CONFIG_COLUMNS
                        + RESULT_COLUMNS + [LEARNING_RATE, "bottleneck", "cpu_model", "cpu_count", "git_commit", "git_dirty",
                                            "result", "config"])
    metrics_frame = pd.DataFrame(metric_rows, columns=KEY_COLUMNS + ["metric", "env_step", "wall_time", "value"])
    holdout = pd.DataFrame(holdout_rows, columns=KEY_COLUMNS + ["env_step", "return_mean", "train_seconds"])
    return RunSet(runs.sort_values("run_id", ignore_index=True), metrics_frame, holdout, problems)


# ---------------------------------------------------------------------- entry point
FRAME_VERSION = 9  # 9: the design column is `design` (was `architecture`); 8: the classes moved to analysis.io.load
"""Bumped when the frames' layout changes in a way the column lists below do not show; the
column lists are part of the fingerprint themselves (a column added without a bump once served
a stale cache without it: tests/test_analysis.py::test_a_new_column_is_never_served_from_an_old_cache)."""


def _fingerprint(sources: list[str]) -> str:
    layout = json.dumps([FRAME_VERSION, KEY_COLUMNS, CONFIG_COLUMNS, RESULT_COLUMNS])
    digest = hashlib.sha1(f"frames {layout}".encode())
    for source in sources:
        digest.update(source.encode())
        if source.startswith(("mongodb://", "mongodb+srv://")):
            return ""  # a database has no cheap fingerprint: never cached
        for path in find_run_dirs(source) if os.path.isdir(source) else []:
            for name in ("run.json", "config.json", "metrics.json"):
                try:
                    stat = os.stat(os.path.join(path, name))
                except OSError:
                    continue
                digest.update(f"{path}/{name}:{stat.st_mtime_ns}:{stat.st_size}".encode())
            digest.update(machine_of(path).encode())
    return digest.hexdigest()


def load_runs(sources: list[str], *, cache_dir: str | None = None, mongo_client_factory=None) -> RunSet:
    """Every usable run under the given folders and MongoDB URLs, as tidy frames.

    Raises NoRunsError when no source holds a usable run (the message names each source);
    otherwise problems with single runs are listed in `RunSet.problems`. `mongo_client_factory`
    replaces pymongo.MongoClient (tests pass mongomock's).
    """
    problems: list[str] = []
    key = _fingerprint(sources) if cache_dir else ""
    if key:
        cached = os.path.join(cache_dir, f"runs-{key[:16]}.pkl")
        if os.path.exists(cached):
            try:
                with open(cached, "rb") as f:
                    return pickle.load(f)
            except Exception:  # noqa: BLE001 - a cache, not a record: one that cannot be read is rebuilt
                pass
    documents = []
    for source in sources:
        if source.startswith(("mongodb://", "mongodb+srv://")):
            documents.extend(mongo_documents(source, problems, mongo_client_factory))
        elif not os.path.isdir(source):
            problems.append(f"runs folder {source!r} does not exist; skipped")
        else:
            found = list(file_documents(source, problems))
            if not found:
                problems.append(f"runs folder {source!r} holds no Sacred runs (no <run id>/run.json); skipped")
            documents.extend(found)
    runset = _frames(documents, problems)
    if runset.runs.empty:
        raise NoRunsError("no usable runs found:\n  " + "\n  ".join(problems or [f"sources: {sources}"]))
    if key:  # a cache, not a record: one that cannot be written is skipped, and never left cut
        try:
            os.makedirs(cache_dir, exist_ok=True)
            atomic_write(cached, pickle.dumps(runset))
        except OSError:
            pass
    return runset
