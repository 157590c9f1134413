"""The run stores analysis reads, as Sacred left them: `-F` folders (any folder holding
`<run id>/run.json`, searched recursively) and MongoDB databases, each run read as a Document,
and the machine a store was made on. analysis/io/load.py turns the documents into frames.

A run is its store plus its Sacred id: separate `-F` stores under one folder each number their
runs 1, 2, ..., and every one of them is read. `run_id` is the Sacred id where it is unique among
the runs read (a sweep's `smoke-76db19def1`), else `<store>/<id>`, the store's path from the
folder the clashing stores share (`store2/1`); only the same run folder or MongoDB run reached
twice is a duplicate (tests/test_report_stores.py)."""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from typing import NamedTuple

SKIP_FOLDERS = {"_sources", "_logs", "_incomplete", "_checkpoints", ".cache"}


class NoRunsError(RuntimeError):
    """Nothing usable was found; the message names every place looked in."""


class Document(NamedTuple):
    """One stored run as read: `run_id` is its Sacred id until name_runs makes it unique."""

    run_id: str
    where: str
    """Its folder, or `<mongodb url>#<id>`: named in problems, the `source` column."""
    run: dict
    config: dict
    metrics: dict
    store: str
    """The folder holding its folder (a `-F` store), or the MongoDB URL."""
    sacred_id: str


# ---------------------------------------------------------------------- file stores
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def shown(path: str) -> str:
    """A store's path as notes print it: relative to the repository where it lies inside it, so
    a report built from the committed runs reads the same from any clone (tests/test_analysis.py)."""
    inside = os.path.abspath(path).startswith(REPO + os.sep)
    return os.path.relpath(path, REPO) if inside else path


def find_run_dirs(root: str) -> list[str]:
    """Every `<run id>/` below root that holds a run.json, sorted."""
    found = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_FOLDERS)
        if "run.json" in files and current != root:
            found.append(current)
            dirs[:] = []
    return sorted(found)


def _read_json(path: str):
    with open(path) as f:
        return json.load(f)


def file_documents(root: str, problems: list[str]):
    """Every run under a file-store root as a document, a run that cannot be read added to `problems`."""
    for path in find_run_dirs(root):
        run_id = os.path.basename(path)
        try:
            run = _read_json(os.path.join(path, "run.json"))
            config = _read_json(os.path.join(path, "config.json"))
        except (OSError, json.JSONDecodeError) as err:
            problems.append(f"run {run_id} ({shown(path)}): unreadable ({err}); left out")
            continue
        try:
            metrics = _read_json(os.path.join(path, "metrics.json"))
        except (OSError, json.JSONDecodeError):
            metrics = {}
        yield Document(run_id, path, run, config, metrics, os.path.dirname(os.path.abspath(path)), run_id)


# ---------------------------------------------------------------------- MongoDB
def mongo_documents(url: str, problems: list[str], client_factory=None):
    """Every run of a MongoDB store as a document (the database named in `url`, else `sacred`)."""
    import pymongo

    database = pymongo.uri_parser.parse_uri(url).get("database") or "sacred"
    client = (client_factory or pymongo.MongoClient)(url, serverSelectionTimeoutMS=3000)
    try:
        client[database].list_collection_names()
    except Exception as err:  # noqa: BLE001 - any failure to reach the server ends here
        raise NoRunsError(f"MongoDB {url!r} is unreachable: {err}") from None
    db = client[database]
    for run in db["runs"].find({}, sort=[("_id", 1)]):
        metrics = {m["name"]: {"steps": m["steps"], "values": m["values"], "timestamps": m.get("timestamps", [])}
                   for m in db["metrics"].find({"run_id": run["_id"]})}
        yield Document(str(run["_id"]), f"{url}#{run['_id']}", run, run.get("config") or {}, metrics, url,
                       str(run["_id"]))


def name_runs(documents: list[Document], problems: list[str]) -> list[Document]:
    """Each run once, under an id unique among them: a run folder (or MongoDB run) reached twice,
    e.g. by `--runs A A/sub`, is read once and named; a Sacred id held by runs of several stores
    becomes `<store>/<id>`, the store's path from the folder those stores share (`store2/1`), or
    its URL for MongoDB. Unique ids stay as they are, so a sweep's runs keep theirs."""
    kept, read = [], {}
    for doc in documents:
        identity = doc.where if doc.where.startswith(("mongodb://", "mongodb+srv://")) else os.path.realpath(doc.where)
        if identity in read:
            problems.append(f"run {doc.run_id} ({doc.where}): the same run was already read from {read[identity]}; "
                            "this copy is left out")
            continue
        read[identity] = doc.where
        kept.append(doc)
    counts = Counter(doc.run_id for doc in kept)
    folders = {os.path.dirname(doc.store) for doc in kept if counts[doc.run_id] > 1 and os.path.isabs(doc.store)}
    base = os.path.commonpath(sorted(folders)) if folders else ""

    def store_name(store: str) -> str:
        return os.path.relpath(store, base) if os.path.isabs(store) else store

    return [doc._replace(run_id=f"{store_name(doc.store)}/{doc.run_id}") if counts[doc.run_id] > 1 else doc
            for doc in kept]


MACHINE_FILE = "machine.json"
"""A store made on another machine names it in this file at its root ({"machine": "sixteen_cores"}):
its runs' sweep reads `<machine>/<sweep>`, so no figure of this machine's sweeps takes them in."""


@functools.lru_cache(maxsize=None)
def machine_of(folder: str) -> str:
    """The `machine` named by the nearest MACHINE_FILE at or above `folder`, or "" (this machine)."""
    if folder.startswith(("mongodb://", "mongodb+srv://")):
        return ""
    here = os.path.abspath(folder)
    while True:
        marker = os.path.join(here, MACHINE_FILE)
        if os.path.isfile(marker):
            return str(_read_json(marker).get("machine", ""))
        parent = os.path.dirname(here)
        if parent == here:
            return ""
        here = parent
