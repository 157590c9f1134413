"""Run stores that cannot lie: records written atomically, a failed write fails the run.

Sacred's FileStorageObserver rewrites `run.json` and `metrics.json` in place and copies sources
with a plain copy, and Sacred only logs an observer's error: on a full disk a run exited 0 with
"Completed" while its run.json was cut at 4,096 bytes, and a 0-byte `_sources/train_*.py` was
reused by every later run of the store. Here:
- every record is written to a temp file in the same folder, fsynced and renamed over the old
  one (`atomic_write`), so a reader sees the last whole record or the one before, never a part;
  a source snapshot is copied the same way, and one left empty or short by an older suite is
  copied again;
- an observer that cannot write remembers the first failure (`failure`), writes nothing more
  (the record on disk stays the last whole one), and the run stops at its next progress report
  with one line naming the store and the error, exit code 1 (experiments/train.py);
- `check_free_space` refuses, before anything is recorded, a store or a checkpoint folder that
  cannot hold the run's expected records and checkpoint.
The MongoDB observer gets the same failure memory: Sacred's falls back to a pickle in /tmp and
reports success. Tests: tests/test_faults.py (a small tmpfs that fills mid-run).
"""

from __future__ import annotations

import functools
import json
import os
import shutil

from sacred.observers import FileStorageObserver, MongoObserver
from sacred.serializer import flatten

from architectures.core.config import ConfigError, DQNConfig
from architectures.core.errors import EventFilesFailed
from architectures.core.event_files import run_folder
from architectures.core.atomic import atomic_write  # noqa: F401 - the suite's one writer, re-exported here

EVENTS = ("started_event", "heartbeat_event", "completed_event", "interrupted_event", "failed_event",
          "log_metrics", "artifact_event", "resource_event")
RECORD_BYTES_PER_LOG = 12 * 80
"""metrics.json bytes per logged env step: ~12 scalars x (value, step, ISO timestamp) ~80 B each."""
RECORD_BYTES_PER_EPISODE = 120
"""run.json's holdout record per evaluation episode (return, length, seed, with JSON's indent)."""
RECORD_BYTES_BASE = 256 * 1024
"""run.json, config.json, cout.txt and the source snapshots of one run, with room to spare."""


class StoreWriteFailed(RuntimeError):
    """A run's record could not be written; the message names the store and the error."""


def _remembers_failure(method):
    """An event that raises is remembered as the store's failure and not raised into Sacred
    (which would only log it); once failed, the observer writes nothing more."""
    @functools.wraps(method)
    def event(self, *args, **kwargs):
        if self.failure is not None:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - any failed write is the run's failure
            reason = err.strerror if isinstance(err, OSError) and err.strerror else f"{type(err).__name__}: {err}"
            self.failure = f"the run store {self.where} could not be written ({reason})"
            if method.__name__ == "started_event":
                raise StoreWriteFailed(self.failure) from None  # nothing started: stop before any work
            return None
    return event


class _RemembersFailure:
    failure: str | None = None
    where: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in EVENTS:
            setattr(cls, name, _remembers_failure(getattr(cls, name)))


class AtomicFileStorageObserver(_RemembersFailure, FileStorageObserver):
    """Sacred's file store, with atomic records and a failure the run hears of."""

    def __init__(self, basedir, *args, **kwargs):
        super().__init__(basedir, *args, **kwargs)
        self.where = repr(str(basedir))

    def started_event(self, *args, **kwargs):
        try:
            return super().started_event(*args, **kwargs)
        except Exception:
            if self.dir and os.path.isdir(self.dir):
                shutil.rmtree(self.dir, ignore_errors=True)  # a run folder without a whole record
            raise

    def save_json(self, obj, filename):
        text = json.dumps(flatten(obj), sort_keys=True, indent=2)
        atomic_write(os.path.join(self.dir, filename), text.encode())

    def save_cout(self):
        atomic_write(os.path.join(self.dir, "cout.txt"), self.cout.encode("utf-8"))
        self.cout_write_cursor = len(self.cout)

    def save_file(self, filename, target_name=None):
        target = os.path.join(self.dir, target_name or os.path.basename(filename))
        if os.path.abspath(filename) != os.path.abspath(target):
            with open(filename, "rb") as f:
                atomic_write(target, f.read())

    def find_or_save(self, filename, store_dir):
        stored = super().find_or_save(filename, store_dir)
        if os.path.abspath(stored) != os.path.abspath(filename) and (
                os.path.getsize(stored) != os.path.getsize(filename)):  # left empty or short by a full disk
            with open(filename, "rb") as f:
                atomic_write(str(stored), f.read())
        return stored


class RecordingMongoObserver(_RemembersFailure, MongoObserver):
    """Sacred's MongoDB observer, whose failed final write fails the run instead of going to a
    pickle in /tmp with a warning."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.where = f"mongodb {self.runs.database.name!r}"

    def final_save(self, attempts):
        import pymongo.errors

        for attempt in range(attempts):
            try:
                self.runs.update_one({"_id": self.run_entry["_id"]}, {"$set": self.run_entry}, upsert=True)
                return
            except (pymongo.errors.AutoReconnect, pymongo.errors.ConnectionFailure):
                if attempt == attempts - 1:
                    raise


def store_failure(observers) -> str | None:
    """The first failure any of `observers` remembers."""
    return next((o.failure for o in observers if getattr(o, "failure", None)), None)


def expected_record_bytes(cfg: DQNConfig) -> int:
    """Bytes the run's records will take at most, twice over (a record and its next version
    exist together for an instant while the next is renamed over it)."""
    logs = cfg.total_env_steps // cfg.log_every + 1
    evaluations = cfg.total_env_steps // cfg.eval_every + 1
    return 2 * (RECORD_BYTES_BASE + logs * RECORD_BYTES_PER_LOG
                + evaluations * cfg.eval_episodes * RECORD_BYTES_PER_EPISODE)


def check_free_space(folder: str, need: int, what: str) -> None:
    """Refuse with one line a folder whose file system has less than `need` bytes free."""
    probe = folder
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    free = shutil.disk_usage(probe or ".").free
    if free < need:
        raise ConfigError(f"{what}: {folder!r} has {_size(free)} free, the run needs ~{_size(need)}; free some "
                          "space or choose another folder")


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024
    return ""


def event_files_failure(run, err: EventFilesFailed) -> Exception:
    """Event files kept beside the run's record are part of its store: their failed write is the
    store's, named as the store names its own."""
    for observer in run.observers:
        if isinstance(observer, AtomicFileStorageObserver) and observer.dir and (
                os.path.commonpath([os.path.abspath(err.log_dir), os.path.abspath(observer.dir)])
                == os.path.abspath(observer.dir)):
            return StoreWriteFailed(f"the run store {observer.where} could not be written ({err.reason})")
    return err


def run_event_folder(run, architecture: str, cfg: DQNConfig) -> str:
    """Where the run's TensorBoard events go: beside its record in a file store (STORE/ID/tensorboard/
    NAME, so `tensorboard --logdir STORE` lists a sweep's runs by id, design, workers, env and
    seed), else under results/tensorboard/ID (a MongoDB-only run)."""
    for observer in run.observers:
        if isinstance(observer, AtomicFileStorageObserver) and observer.dir:
            return run_folder(os.path.join(observer.dir, "tensorboard"), architecture, cfg)
    return run_folder(os.path.join("results", "tensorboard", str(run._id)), architecture, cfg)
