"""Where a sweep's runs are stored and how it reads them back: files under --out (FileStore) or
MongoDB (MongoStore), each run's record as experiments/sweeps/records.py classifies it, and the
store's lock that keeps a second sweep off it."""

from __future__ import annotations

import os
import shutil
import time

from experiments.sweeps.records import ABSENT, RunRecord, classify, read_run_folder


class FileStore:
    def __init__(self, out: str):
        self.out = out

    def check(self) -> None:
        try:
            os.makedirs(self.out, exist_ok=True)
            probe = os.path.join(self.out, f".write-probe-{os.getpid()}")
            with open(probe, "w") as f:
                f.write("ok")
            os.remove(probe)
        except OSError as err:
            raise SystemExit(f"error: --out {self.out!r} is not writable: {err.strerror or err}") from None

    def record(self, run_id: str) -> RunRecord:
        return read_run_folder(os.path.join(self.out, run_id))

    def clear_incomplete(self, run_id: str) -> None:
        path = os.path.join(self.out, run_id)
        if os.path.exists(path):
            aside = os.path.join(self.out, "_incomplete")
            os.makedirs(aside, exist_ok=True)
            shutil.move(path, os.path.join(aside, f"{run_id}-{time.strftime('%Y%m%dT%H%M%S')}"))

    def observer_args(self) -> list[str]:
        return ["-F", self.out]


class MongoStore(FileStore):
    """Runs in MongoDB (`runs` collection); per-run logs still go under --out."""

    def __init__(self, url: str, out: str):
        super().__init__(out)
        from experiments.train import mongo_target

        self.url, self.db_name = mongo_target(url)

    def check(self) -> None:
        super().check()
        import pymongo

        try:
            self.client = pymongo.MongoClient(self.url, serverSelectionTimeoutMS=3000)
            self.client.admin.command("ping")
        except Exception as err:  # noqa: BLE001 - any failure to reach the server stops us here
            raise SystemExit(f"error: --mongo {self.url!r} is unreachable: {err}") from None
        self.runs = self.client[self.db_name]["runs"]

    def record(self, run_id: str) -> RunRecord:
        doc = self.runs.find_one({"_id": run_id}, {"status": 1, "result": 1})
        return classify(doc) if doc else RunRecord(ABSENT)

    def clear_incomplete(self, run_id: str) -> None:
        """Deletes the run's document unless it counts (COMPLETED with a result)."""
        if not self.record(run_id).counts:
            self.runs.delete_one({"_id": run_id})

    def observer_args(self) -> list[str]:
        return ["--mongo", self.url]


def hold_store_lock(out: str):
    """An exclusive lock on <out>/.sweep.lock for this process's life, or exit 2 naming its holder."""
    import fcntl

    handle = open(os.path.join(out, ".sweep.lock"), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        raise SystemExit(f"error: another sweep ({holder}) is running on the store {out!r}; wait for it or "
                         "use another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle
