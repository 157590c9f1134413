"""A run's bookkeeping, the same for every design: the clock, the sync points, logging,
evaluation, checkpoints and the result.

After Sample Factory's runner and Acme's environment loop: a design builds one `Run` and hands it
what it learns and acts with; it never writes the Run's fields. What differs between designs
(how they act, how they learn, what they save) reaches the Run as its parts: `attach(name, part)`
registers a Saveable (`save()` / `restore(state)`); a save writes every part's state under its
name and `resume()` restores every part, in the order attached (the learning, the env streams, the
workers' own state collected from them at a sync point: run/parts.py). No design reads or writes a
checkpoint itself. A part whose restore dropped n-step starts pending at the save returns what it
found (`Restored`), for the result. A design without replay (hogwild's main process) attaches no
ReplayLearning.

A design that checkpoints mid-episode drops the n-step starts still pending in its adders on resume
and counts them; single_env and high_utd checkpoint at episode ends, where nothing is pending, and
resume bit for bit (tests/test_resume.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from architectures.core.config import DQNConfig
from architectures.core.device import host_float
from architectures.core.errors import RunDiverged
from architectures.core.evaluation import HoldoutEvaluator
from architectures.core.metrics import CpuMeter, Reporter, Stopwatch, Timers, cpu_summary
from architectures.core.networks import host_copy
from architectures.core.schedules import UpdateRatio
from architectures.run.acting import EpisodeStats
from architectures.run.checkpoint import (
    check_owner,
    hold_lock,
    load_checkpoint,
    remove_checkpoint,
    save_checkpoint,
    stamp,
)
from architectures.run.curves import Curves
from architectures.run.sync_points import Stop, stops
from architectures.run.results import run_result


class Saveable(Protocol):
    """What a run saves and restores of a design's component (Acme's Saveable): the one naming pair,
    save() / restore(state), of every part of this suite that a checkpoint holds. (The core data
    structures beside torch's modules, the replay buffers and the learner, keep torch's
    state_dict / load_state_dict.)"""

    def save(self) -> dict: ...

    def restore(self, state: dict) -> Any: ...


@dataclass
class LearningLog:
    """What the learning side reports at a log: its update count, the TD losses summed since the
    last log, the latest batch's Q-values taken, and its policy-lag diagnostics (designs that
    learn from several sources), whose window is read only where fresh updates are logged."""

    updates: int
    loss_sum: float
    q_taken: Any = None
    lag: Any = None
    grad_norm: Any = None  # the latest update's gradient norm before clipping (a tensor), where kept


@dataclass
class Restored:
    """What restoring an acting part found, for the result: the n-step starts that were pending at
    the save and are dropped (0 at an episode end), and the epsilon each env stream resumes with."""

    dropped: int = 0
    epsilons: list[float] = field(default_factory=list)


class Run:
    """The bookkeeping of one run (see the module docstring). `net` is what the holdout evaluator
    plays: the learner's online network, or hogwild's shared one."""

    def __init__(self, design: str, cfg: DQNConfig, reporter: Reporter, net):
        self.design, self.cfg, self.reporter = design, cfg, reporter
        self.evaluator = HoldoutEvaluator(cfg, net)
        self.stops: list[Stop] = stops(cfg)
        self._parts: dict[str, Saveable] = {}
        self._next_stop = 0  # index into stops
        self.clock, self.timers = Stopwatch(), Timers()
        self._logged = {"updates": 0, "episodes": 0, "length_sum": 0, "return_sum": 0.0}
        self._next_log = cfg.log_every
        self._next_save = cfg.checkpoint_every  # single_env, vector_env: the first save at or after this
        self._last_holdout: float | None = None
        self._resumed_from, self._dropped, self._saves = 0, 0, 0
        self._clock_before = 0.0  # training seconds before a resume
        self._epsilons: list[float] | None = None  # each env stream's epsilon when it resumed
        self.curves = Curves(cfg, reporter)  # what a watcher wants beside the log (run/curves.py)

    # ------------------------------------------------------------------ parts
    def attach(self, name: str, part: Saveable) -> Saveable:
        """Save and restore `part` with the run, under `name`."""
        if name in self._parts:
            raise ValueError(f"run part {name!r} attached twice")
        self._parts[name] = part
        return part

    def play_with(self, net, refresh: Callable[[], None]) -> None:
        """The holdout plays `net`, refreshed by `refresh()` first: a device learner's host copy."""
        self.evaluator.net, self.evaluator.before = net, refresh

    @property
    def learning(self):
        """The attached ReplayLearning, or None (a design whose workers learn)."""
        return self._parts.get("learning")

    @property
    def next_stop(self) -> int:
        return self._next_stop

    @property
    def resumed_from_env_steps(self) -> int:
        return self._resumed_from

    # ------------------------------------------------------------------ the clock
    def start_clock(self, workers: Callable[[], list[int]] | None = None) -> None:
        """(Re)start the training clock when the loop proper starts, so set-up (spawning workers,
        making envs, loading a checkpoint) is never throughput time; a resumed run continues
        its saved clock. `workers` lists the worker processes' pids: their CPU and this
        process's over the clock's time make the result's `cpu` (`cpu_summary`)."""
        self.clock = Stopwatch(already=self._clock_before, cpu=CpuMeter(workers))

    def end_clock(self) -> None:
        """The run's last env step is learned from: stop the training clock here, so teardown (joining
        workers, closing envs, shared memory) is not training time; counted, it read as a collapse at
        many actors (docs/design-notes.md; tests/test_clock.py::test_the_training_clock_stops_before_teardown)."""
        if self.clock.running:
            self.clock.pause()

    def diverged(self, reason: str, update: int, env_steps: int, max_abs_q: float) -> RunDiverged:
        """The stop of a run whose loss or Q went non-finite at `update`, with the holdout so far
        and the largest |Q| of the batch that showed it (NaN or inf: what it saw)."""
        return RunDiverged(reason, update=update, env_steps=env_steps, max_abs_q=max_abs_q,
                           holdout_curve=[{"env_steps": r["env_steps"], "return_mean": r["return_mean"]}
                                          for r in self.evaluator.results], train_seconds=self.clock.elapsed())

    # ------------------------------------------------------------------ logging / evaluation
    def log_due(self, env_steps: int) -> bool:
        return env_steps >= self._next_log

    def log(self, env_steps: int, episodes: EpisodeStats, learned: LearningLog | None = None, **scalars: float) -> None:
        """Log once, if due: throughput, the mean TD loss and episode return and length since the
        last log, q_mean of the latest batch, the policy-lag window, and `scalars`. `learned`
        defaults to the attached ReplayLearning's (`LearningLog`)."""
        if env_steps < self._next_log:
            return
        self._next_log = (env_steps // self.cfg.log_every + 1) * self.cfg.log_every
        report, logged = self.reporter.scalar, self._logged
        steps_per_sec = env_steps / self.clock.elapsed()
        report("env_steps_per_sec", steps_per_sec, env_steps)
        if learned is None:
            learned = self.learning.log_stats(env_steps)
        if learned.updates > logged["updates"]:
            report("td_loss", learned.loss_sum / (learned.updates - logged["updates"]), env_steps)  # mean since the last log
            if learned.q_taken is not None:
                report("q_mean", host_float(learned.q_taken.mean()), env_steps)  # latest batch
            if learned.lag is not None:
                window = learned.lag.window()
                report("policy_lag_mean", window["mean"], env_steps)
                report("policy_lag_p95", window["p95"], env_steps)
            logged["updates"] = learned.updates
        if episodes.episodes > logged["episodes"]:  # means over the episodes finished since the last log
            finished = episodes.episodes - logged["episodes"]
            report("train_episode_return", (episodes.return_sum - logged["return_sum"]) / finished, env_steps)
            report("train_episode_length", (episodes.length_sum - logged["length_sum"]) / finished, env_steps)
            logged.update(episodes=episodes.episodes, return_sum=episodes.return_sum, length_sum=episodes.length_sum)
        for name, value in scalars.items():
            report(name, value, env_steps)
        self.curves.report(env_steps, self.clock.elapsed(), learned, self.learning)
        self.reporter.progress(env_steps, self.cfg.total_env_steps, steps_per_sec, self._last_holdout)

    def evaluate(self, env_steps: int) -> dict:
        result = self.evaluator.evaluate_off_clock(env_steps, self.clock, self.timers)
        self._last_holdout = result["return_mean"]
        self.reporter.holdout(result)
        return result

    def evaluation_due(self, env_steps: int) -> bool:
        return self.evaluator.due(env_steps)

    def maybe_evaluate(self, env_steps: int) -> dict | None:
        return self.evaluate(env_steps) if self.evaluator.due(env_steps) else None

    # ------------------------------------------------------------------ checkpoints
    def save_due(self, env_steps: int) -> bool:
        """For designs without sync points (single_env, vector_env): the first chance at or after
        checkpoint_every env steps since the last save, short of the end."""
        return bool(self.cfg.checkpoint_every) and self._next_save <= env_steps < self.cfg.total_env_steps

    def save(self, env_steps: int) -> None:
        """Write the run's state and every part's atomically, off the clock."""
        self.clock.pause()
        began = time.perf_counter()
        self._next_save = env_steps + self.cfg.checkpoint_every
        self._saves += 1
        save_checkpoint(self.cfg.checkpoint_path, {
            **stamp(self.design, self.cfg), "env_steps": env_steps, "train_seconds": self.clock.elapsed(),
            "run": self._state(), "parts": {name: part.save() for name, part in self._parts.items()}})
        self.timers.add("checkpoint", time.perf_counter() - began)
        self.clock.resume()

    def at_stop(self, env_steps: int) -> bool:
        """Workers are stopped at the next stop: evaluate and/or save there (a part that lives in the
        workers collects its state from them then); returns whether it was the last stop."""
        stop = self.stops[self._next_stop]
        assert env_steps == stop.env_steps, (env_steps, stop)
        if stop.evaluate:
            self.evaluate(env_steps)
        self._next_stop += 1
        if stop.save:
            self.save(env_steps)
        if self._next_stop == len(self.stops):
            self.end_clock()
            return True
        return False

    def resume(self) -> bool:
        """Restore the run and every part from the checkpoint; False where there is none (a fresh
        start). The holdout results saved so far are reported again, so the run's record is whole;
        the env steps it resumes from are `resumed_from_env_steps`."""
        hold_lock(self.cfg.checkpoint_path)  # taken already where experiments.train checked the path first
        saved = load_checkpoint(self.cfg.checkpoint_path)
        if saved is None:
            return False
        check_owner(saved, self.design, self.cfg)
        self._load_state(saved["run"])
        found = [part.restore(saved["parts"][name]) for name, part in self._parts.items()]
        found = [r for r in found if isinstance(r, Restored)]
        if found:  # what the acting parts dropped and the epsilons they resume with, for the result
            self._dropped = sum(r.dropped for r in found)
            self._epsilons = [e for r in found for e in r.epsilons]
        # The sync points are rebuilt from this config, whose checkpoint_every may differ from
        # the saved run's: the next one is the first past the saved env steps, never a saved index
        # (tests/test_resume.py RESUMED_WITH).
        self._next_stop = next((i for i, stop in enumerate(self.stops) if stop.env_steps > saved["env_steps"]),
                               len(self.stops))
        self._clock_before = saved["train_seconds"]
        self._resumed_from = saved["env_steps"]
        self._next_log = (saved["env_steps"] // self.cfg.log_every + 1) * self.cfg.log_every
        getattr(self.reporter, "resumed", lambda env_steps: None)(saved["env_steps"])  # a curve writer drops its later points
        for result in self.evaluator.results:
            self.reporter.holdout(result)
        self._last_holdout = self.evaluator.results[-1]["return_mean"] if self.evaluator.results else None
        return True

    def _state(self) -> dict:
        return {"holdout": self.evaluator.results, "next_stop": self._next_stop, "next_save": self._next_save,
                "timers": self.timers.state_dict(), "logged": dict(self._logged), "saves": self._saves}

    def _load_state(self, state: dict) -> None:
        self.evaluator.results = state["holdout"]
        self._next_stop, self._next_save = state["next_stop"], state["next_save"]
        self.timers.load_state_dict(state["timers"])
        self._logged, self._saves = dict(state["logged"]), state["saves"]

    # ------------------------------------------------------------------ the result
    def hand_over(self) -> None:
        """Give the reporter's optional `trained` hook a CPU copy of the net the holdout plays (the
        learner's online net, hogwild's shared one, a device learner's host copy refreshed first):
        the one place every design ends, so the Python API gets what was learned from each."""
        trained = getattr(self.reporter, "trained", None)
        if trained is None:
            return
        if self.evaluator.before is not None:
            self.evaluator.before()
        trained(host_copy(self.evaluator.net))

    def result(self, *, env_steps: int, episodes: EpisodeStats, updates: int | None = None,
               components: dict[str, tuple[float, int]] | None = None, **extra) -> dict:
        """The run's result (run/results.py: run_result); `components` adds name -> (seconds,
        calls) to the time breakdown, before the attached learning's own. A finished run deletes
        its checkpoint: a rerun starts afresh, and hands the reporter the trained network
        (`hand_over`)."""
        train_seconds = self.clock.elapsed()
        extra.setdefault("cpu", cpu_summary(self.clock, env_steps - self._resumed_from))
        learning = self.learning
        updates = learning.updates if updates is None else updates
        parts = dict(components or {})
        if learning is not None:
            parts.update(learning.components(updates))
        for name, (seconds, calls) in parts.items():
            self.timers.add(name, seconds, calls)
        self.evaluator.close()
        self.hand_over()
        remove_checkpoint(self.cfg.checkpoint_path)
        return run_result(self.cfg, env_steps=env_steps, updates=updates, episodes=episodes.episodes,
                          train_seconds=train_seconds, ratio=UpdateRatio(self.cfg.utd, self.cfg.learning_starts),
                          timers=self.timers, evaluator=self.evaluator, resumed_from_env_steps=self._resumed_from,
                          dropped_on_resume=self._dropped, epsilon_at_resume=self._epsilons,
                          checkpoints_written=self._saves, **extra)
