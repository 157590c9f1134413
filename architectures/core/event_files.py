"""TensorBoard event files written while a run trains, so a long run can be watched live.

SB3 (`tensorboard_log=`), CleanRL (`runs/`), Sample Factory and RLlib all write them; a
practitioner's 8-hour run should not show only a progress bar. The writer is a `Reporter`: it
sees exactly what the run reports to Sacred, at the log cadence (never per env step), plus the
distributions Sacred cannot keep (`histogram`). It lives in the main process only, as every
reporter does; workers reach it through the channels the run's log already reads.

Step axis: env steps. Tags are grouped (throughput/, learning/, episodes/, holdout/, acting/,
workers/, roles/, design/) so TensorBoard's sections read like the report's; a log's points are
written as one event when the log ends. A resumed run opens its
writer with `purge_step` just past its checkpoint: TensorBoard drops what the killed process
wrote after it, and the holdouts the resume re-reports are not written twice.
"""

from __future__ import annotations

import functools
import os
import threading

import numpy as np

from architectures.core.errors import EventFilesFailed

HISTOGRAM_BINS = 30
"""Bins of a histogram: few, since TensorBoard's default ('tensorflow', ~1,500 fixed buckets) made
each histogram far dearer on the main process (docs/design-notes.md#event_files)."""
FLUSH_S = 10
"""How often pending events reach the file: a watcher sees a point within this many seconds."""
QUEUE = 256
"""Events the writer's thread may hold unwritten, so a write never waits for it: at TensorBoard's
default 10 a log blocked on that thread with the cores busy (docs/design-notes.md#event_files);
a log is one event now."""

GROUPS = {
    "throughput": ("env_steps_per_sec", "learning_env_steps_per_sec", "realised_utd"),
    "learning": ("td_loss", "q_mean", "q_max", "q_taken", "policy_lag_mean", "policy_lag_p95", "policy_lag",
                 "grad_norm", "updates"),
    "episodes": ("train_episode_return", "train_episode_length"),
    "holdout": ("holdout_return_mean", "holdout_returns", "holdout_lengths"),
    "acting": ("epsilon", "replay_fill", "acting_weight_age", "acting_weight_age_mean", "actor_weights_staleness_max"),
}
SECTION = {name: group for group, names in GROUPS.items() for name in names}
PREFIXES = (("worker_", "workers"), ("epsilon_", "acting"), ("busy_", "roles"), ("bound", "roles"))
"""Names made per worker or per role (worker_share_min, epsilon_actor3, busy_learner) by their start."""


def tag(name: str) -> str:
    """The TensorBoard tag of a reported name: its section, then the name (less the section's own
    prefix: holdout_returns is holdout/returns)."""
    section = SECTION.get(name) or next((group for start, group in PREFIXES if name.startswith(start)), "design")
    if section == "workers":
        return f"workers/{name}"
    return f"{section}/{name.removeprefix(section + '_')}"


def run_folder(root: str, design: str, cfg) -> str:
    """A run's event folder under `root`, named by what a sweep varies (design, workers, env,
    seed), so `tensorboard --logdir root` lists a sweep's runs side by side."""
    workers = "" if design in ("single_env", "high_utd") else f"_w{cfg.num_workers}"  # one process acts
    env = cfg.env_id.replace("/", "-").replace(":", "-")
    return os.path.join(root, f"{design}{workers}_{env}_seed{cfg.seed}")


def _quiet_writer_threads() -> None:
    """TensorBoard's writer thread re-raises a failed write after storing it; the main thread
    raises it again at the next write or close (where it fails the run in one line), so the
    thread's own traceback on stderr is noise. Other threads' exceptions print as before."""
    if getattr(threading.excepthook, "quiets_event_writers", False):
        return
    previous = threading.excepthook

    def hook(args):
        if not (type(args.thread).__name__ == "_AsyncWriterThread" and isinstance(args.exc_value, OSError)):
            previous(args)

    hook.quiets_event_writers = True
    threading.excepthook = hook


def _fails_the_run(method):
    """A write that raises (a full disk, a folder gone) fails the run with one line; after that
    the reporter writes nothing more (its writer's thread keeps raising the same error)."""
    @functools.wraps(method)
    def write(self, *args, **kwargs):
        if self.failed:
            return None
        try:
            return method(self, *args, **kwargs)
        except OSError as err:
            raise self.failure(err) from err
    return write


class TensorBoardReporter:
    """Writes what a run reports to event files in `log_dir` (created on the first point)."""

    def __init__(self, log_dir: str) -> None:
        from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary
        from torch.utils.tensorboard import SummaryWriter  # tensorboard's own writer, through torch

        # Imported here, before any run's clock starts: imported at the first point, the import fell
        # inside the speed measure's window and read as a cost of writing
        # (docs/design-notes.md#event_files).
        self._summary_writer, self._summary, self._histogram = SummaryWriter, Summary, HistogramProto
        self.log_dir = log_dir
        self._writer = None
        self._purge: int | None = None
        self._replayed = -1  # holdouts at or before this env step were written by an earlier process
        self._pending: list = []  # the points of the log in progress (one env step), written as one event
        self._pending_step = -1
        self.failed = False

    @property
    def writer(self):
        if self._writer is None:  # opened at the first point, once a resume has set purge_step
            _quiet_writer_threads()
            self._writer = self._summary_writer(self.log_dir, purge_step=self._purge, flush_secs=FLUSH_S,
                                               max_queue=QUEUE)
        return self._writer

    def resumed(self, env_steps: int) -> None:
        """A resumed run: drop what was written after the checkpoint, and skip the holdouts it
        re-reports (they are in the files already)."""
        self._purge, self._replayed = env_steps + 1, env_steps

    @_fails_the_run
    def scalar(self, name: str, value: float, env_steps: int) -> None:
        self._add(env_steps, self._summary.Value(tag=tag(name), simple_value=float(value)))

    @_fails_the_run
    def histogram(self, name: str, values, env_steps: int) -> None:
        """Counted here, with no BLAS call: TensorBoard's `add_histogram` takes the sum of squares
        with `values.dot(values)`, which OpenBLAS spreads over threads for long arrays (a policy-lag
        window holds up to 32k values); its idle worker then spins at the learner's priority, taking
        CPU from nice-19 actors (docs/design-notes.md#event_files)."""
        values = np.asarray(values, dtype=np.float64).ravel()
        values = values[np.isfinite(values)]
        if values.size:
            counts, edges = np.histogram(values, bins=HISTOGRAM_BINS)
            self._add(env_steps, self._summary.Value(tag=tag(name), histo=self._histogram(  # TensorBoard's layout:
                min=float(values.min()), max=float(values.max()), num=int(values.size),  # right edges, an empty
                sum=float(values.sum()), sum_squares=float(np.square(values).sum()),  # bucket on the left
                bucket_limit=edges.tolist(), bucket=[0, *counts.tolist()])))

    def _add(self, env_steps: int, value) -> None:
        """A point of the log at `env_steps`: held until the log ends (`progress`) or another step's.
        The first point opens the files, so a folder that cannot be made fails the run there."""
        if self._writer is None:
            self.writer  # noqa: B018 - opened for its side effect
        if self._pending and env_steps != self._pending_step:
            self._write_pending()
        self._pending_step = env_steps
        self._pending.append(value)

    def _write_pending(self) -> None:
        """The held points as one event: a log's 20-30 points cost one hand-off to the writer's
        thread and one record, not 20-30 (docs/watching.md: what the writer costs)."""
        if self._pending:
            points, self._pending = self._pending, []
            self.writer.file_writer.add_summary(self._summary(value=points), global_step=self._pending_step)

    @_fails_the_run
    def text(self, name: str, value: str, env_steps: int) -> None:
        self._write_pending()
        self.writer.add_text(tag(name), value, env_steps)

    @_fails_the_run
    def holdout(self, result: dict) -> None:
        step = int(result["env_steps"])
        if step <= self._replayed:
            return
        self._write_pending()
        self.scalar("holdout_return_mean", float(result["return_mean"]), step)
        self.histogram("holdout_returns", result.get("returns") or [], step)
        self.histogram("holdout_lengths", result.get("lengths") or [], step)
        self._write_pending()
        self.writer.flush()  # a holdout is what a watcher waits for

    @_fails_the_run
    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        """The end of a log (Run.log says so last): its points go to the file."""
        self._write_pending()

    def close(self) -> None:
        """Flush and close; a final flush that fails fails the run, unless it failed already."""
        try:
            if not self.failed:
                self._write_pending()
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
        except OSError as err:
            if not self.failed:
                raise self.failure(err) from err

    def failure(self, err: OSError) -> EventFilesFailed:
        """The run's one-line failure for a write that raised `err`; nothing is written after it."""
        self.failed = True
        return EventFilesFailed(self.log_dir, err.strerror or str(err))
