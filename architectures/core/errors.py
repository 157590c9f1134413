"""Faults a run stops on with one line: what went wrong, where, and when.

`RunError`s are expected failures of a run, not bugs: their message is the whole story, so the
command line prints `error: <message>` and no traceback (experiments/train.py), and a worker
that raises one sends its message alone to the main process (workers.run_worker).
`ConfigError` is the same promise for a config, raised before any work (core/config.py re-exports
it, where its users have always found it).
"""

from __future__ import annotations

import sys
import warnings


class ConfigError(ValueError):
    """A config value is out of range; the message names the key and the valid range."""


class RemoteTraceback(Exception):
    """Another process's traceback, as text: the cause a RunError carries across processes, so
    the run's record (Sacred's fail_trace in run.json) shows where the fault happened."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0]).rstrip()


class RunError(RuntimeError):
    """A fault of the run whose message, one line, names it fully. `detail`, where given, is the
    traceback behind it (text: it travels from a worker, an env process or a Ray actor with the
    error) and becomes its cause, so the traceback goes to the run's record, never the terminal."""

    def __init__(self, message, detail: str | None = None):
        if isinstance(message, RunError):  # rebuilt from an instance (gymnasium's `raise exctype(value)`)
            message, detail = str(message), detail or getattr(message, "detail", None)
        super().__init__(message)
        self.detail = detail
        if detail:
            self.__cause__ = RemoteTraceback(detail)

    def __setstate__(self, state: dict) -> None:  # unpickled in another process: the cause is the text
        self.__dict__.update(state)
        if state.get("detail"):
            self.__cause__ = RemoteTraceback(state["detail"])


class EnvFailed(RunError):
    """The env raised in reset or step: the message names the env, the process it ran in, the
    env step and the exception's own message (envs.GuardedEnv, the one place every design's
    envs raise through)."""


class NonFiniteEnvValue(RunError):
    """An env returned a NaN or infinite observation or reward: it never enters the replay
    (run.acting.EpisodeStream.record; tests/test_faults.py::test_a_non_finite_env_value_stops_the_run)."""


class CheckpointSaveFailed(RunError):
    """A checkpoint could not be written; its temp file is removed and the previous one kept."""


class EventFilesFailed(RunError):
    """TensorBoard's event files could not be written: a run whose curves are lost is failed, as
    one whose record is (core/event_files.py). `reason` is the OS's word for it."""

    def __init__(self, log_dir: str, reason: str):
        super().__init__(f"the event files in {log_dir!r} could not be written ({reason})")
        self.log_dir, self.reason = log_dir, reason


class RunDiverged(RunError):
    """A TD loss or Q value went non-finite at learner update `update`: the run stops there and
    is recorded as diverged (experiments/train.py), never as an ordinary result."""

    def __init__(self, reason: str, *, update: int, env_steps: int, max_abs_q: float,
                 holdout_curve: list[dict] | None = None, train_seconds: float | None = None):
        super().__init__(self.describe(reason, update, env_steps))
        self.reason, self.update, self.env_steps, self.max_abs_q = reason, update, env_steps, max_abs_q
        self.holdout_curve, self.train_seconds = holdout_curve or [], train_seconds

    @staticmethod
    def describe(reason: str, update: int, env_steps: int) -> str:
        return f"diverged: {reason} at learner update {update:,} ({env_steps:,} env steps)"

    def __reduce__(self):  # travels from a hogwild worker to the main process on a queue
        return _rebuild_diverged, (self.reason, self.update, self.env_steps, self.max_abs_q)

    def result(self) -> dict:
        """What the run records: `diverged` with where and why, and the holdout so far."""
        curve = self.holdout_curve
        return {"diverged": True, "diverged_at_update": self.update, "diverged_at_env_steps": self.env_steps,
                "diverged_reason": self.reason, "max_abs_q": self.max_abs_q, "env_steps": self.env_steps,
                "updates": self.update, "train_seconds": self.train_seconds, "holdout_curve": curve,
                "final_holdout_return": curve[-1]["return_mean"] if curve else float("nan")}


def _rebuild_diverged(reason: str, update: int, env_steps: int, max_abs_q: float) -> RunDiverged:
    return RunDiverged(reason, update=update, env_steps=env_steps, max_abs_q=max_abs_q)


class RunWarning(RuntimeWarning):
    """A setting the run goes on with but its user should know of (workers time-sharing the cores,
    a utd likely to diverge): a RuntimeWarning to Python callers, one plain line on the command
    lines (`plain_warnings`)."""


def plain_warnings() -> None:
    """Print RunWarnings as `warning: <message>`, one line, as the errors are printed, not as
    Python's `file.py:125: RuntimeWarning:` followed by the source line. The command lines call it;
    other warnings print as Python prints them."""
    shown = warnings.showwarning
    if getattr(shown, "plain", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, RunWarning):
            print(f"warning: {message}", file=file or sys.stderr, flush=True)
        else:
            shown(message, category, filename, lineno, file, line)

    show.plain = True
    warnings.showwarning = show
