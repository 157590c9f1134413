"""The loop driver all five architectures run on: an env-stepping side and a learner-driving side.

After Acme's actor/learner split and Sample Factory's runner base, what every design does the
same way lives here once, so an architecture file keeps only its data flow:

- `EpisodeStream` / `EnvLoop` (acting): one env's episode-seed stream, n-step adder and episode
  statistics; `EnvLoop` adds the env, the policy and its epsilon schedule, and `step(version)`
  acts, steps, folds and resets, returning the transitions the step completed. Their `state()`
  is everything the stream needs to go on (seed stream, the current episode's seed, policy
  RNG, own step count, which is epsilon's position, statistics); `restore()` starts a fresh
  episode from it. vector_env keeps N `EpisodeStream`s beside its batched envs.
- `LearnerLoop` (learning and bookkeeping): the learner, the replay and its RNG, `UpdateRatio`,
  the policy-lag diagnostics, the holdout evaluator, the training clock, the timers and the
  logging cadence: `learn_owed(env_steps)`, `log(env_steps, episodes)`, `maybe_evaluate`,
  `save(env_steps, parts)` / `resume()`, `result(...)`.
- `Stop` / `stops(cfg)`: the env-step points where multi-process designs park their workers:
  every holdout checkpoint and every checkpoint save. Parked workers are the consistent point a
  checkpoint needs (no transition in a ring, no update in flight).

Checkpoints of every design hold the LearnerLoop's state plus named parts of the design's own
(each worker's stream state, shared tensors, ...). A design that checkpoints mid-episode drops
the n-step starts still pending in its adders on resume and counts them (`dropped_on_resume`);
single_env and high_utd checkpoint at episode ends, where nothing is pending, and resume bit
for bit (tests/test_resume.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from architectures.checkpoint import (check_owner, hold_lock, load_checkpoint, remove_checkpoint, save_checkpoint,
                                      stamp)
from architectures.config import DQNConfig
from architectures.diagnostics import PolicyLag
from architectures.dqn import DQNLearner, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.errors import NonFiniteEnvValue, RunDiverged
from architectures.evaluation import HoldoutEvaluator, checkpoint_steps
from architectures.metrics import CpuMeter, Reporter, Stopwatch, Timers, cpu_summary
from architectures.networks import GreedyPolicy
from architectures.replay import NStepAdder, ReplayBuffer, Transition
from architectures.results import run_result


def _finite(array: np.ndarray) -> bool:
    return bool(np.isfinite(array).all())


def rng_seeds(cfg: DQNConfig) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(acting, replay) seed sequences of a run; worker i of N acts on acting.spawn(N)[i]."""
    act, replay = np.random.SeedSequence(cfg.seed).spawn(2)
    return act, replay


# ============================================================================== acting
def worker_env_cost(cfg: DQNConfig, index: int) -> float:
    """Busy CPU added to env `index`'s steps: everyone's `env_step_cost_us`, and worker 0's
    `slow_worker_cost_us` on top when there are several workers (uneven workers)."""
    return cfg.env_step_cost_us + (cfg.slow_worker_cost_us if index == 0 and cfg.num_workers > 1 else 0.0)


@dataclass
class EpisodeStats:
    """Running totals over finished training episodes."""

    episodes: int = 0
    length_sum: int = 0
    return_sum: float = 0.0

    def __add__(self, other: "EpisodeStats") -> "EpisodeStats":
        return EpisodeStats(self.episodes + other.episodes, self.length_sum + other.length_sum,
                            self.return_sum + other.return_sum)


class EpisodeStream:
    """One env's stream of training episodes: reset seeds, the n-step adder, episode statistics."""

    def __init__(self, cfg: DQNConfig, index: int):
        self.env_id, self.index = cfg.env_id, index
        self.float_obs: bool | None = None  # known at the first step: whether observations can be non-finite
        self.seeds = training_episode_seeds(cfg.seed, index)
        self.adder = NStepAdder(cfg.n_step, cfg.gamma, source=index)
        self.stats = EpisodeStats()
        self.steps = 0  # this stream's env steps: epsilon's position for an actor
        self.episode_return, self.episode_length = 0.0, 0
        self.max_abs_reward = 0.0  # the return scale high_utd's divergence check reads
        self.episode_seed = next(self.seeds)  # the seed the current episode was reset with

    def record(self, obs, action: int, reward, next_obs, terminated, truncated, version: int) -> list[Transition]:
        """Count one env step; returns the transitions it completed. At an episode end the
        statistics take the episode and `episode_seed` becomes the next episode's."""
        self.steps += 1
        reward = float(reward)
        # The finite check costs ~1 us a step (a dot product of the observation with itself; an
        # overflow to inf is confirmed element-wise before it counts): a NaN or inf never enters
        # the replay. Integer and boolean observations (MinAtar's) cannot be non-finite.
        if self.float_obs is None:
            self.float_obs = next_obs.dtype.kind == "f"
        if self.float_obs:
            flat = next_obs.ravel()
            if not math.isfinite(flat.dot(flat)) and not _finite(flat) or self.episode_length == 0 and not _finite(obs):
                self.refuse(obs, reward)
        if not math.isfinite(reward):
            self.refuse(obs, reward)
        self.episode_return += reward
        self.episode_length += 1
        if abs(reward) > self.max_abs_reward:
            self.max_abs_reward = abs(reward)
        transitions = self.adder.step(obs, action, reward, next_obs, terminated, truncated, version)
        if terminated or truncated:
            stats = self.stats
            stats.episodes += 1
            stats.length_sum += self.episode_length
            stats.return_sum += self.episode_return
            self.episode_return, self.episode_length = 0.0, 0
            self.episode_seed = next(self.seeds)
        return transitions

    def refuse(self, obs: np.ndarray, reward: float) -> None:
        what = (f"reward ({reward})" if not math.isfinite(reward) else
                "observation" if self.episode_length or _finite(obs) else "observation at reset")
        raise NonFiniteEnvValue(f"env {self.env_id} (worker {self.index}) returned a non-finite {what} at its env "
                                f"step {self.steps:,}; nothing from that step entered the replay")

    def state(self) -> dict:
        return {"steps": self.steps, "seeds": self.seeds.state, "episode_seed": self.episode_seed,
                "stats": asdict(self.stats), "max_abs_reward": self.max_abs_reward,
                "pending": len(self.adder.pending)}

    def restore(self, state: dict) -> int:
        """Continue from `state` with a fresh episode reset with its `episode_seed`; returns the
        n-step starts that were pending at the save and are dropped (0 at an episode end)."""
        self.steps, self.seeds.state, self.episode_seed = state["steps"], state["seeds"], state["episode_seed"]
        self.stats = EpisodeStats(**state["stats"])
        self.max_abs_reward = state["max_abs_reward"]
        self.adder.reset()
        self.episode_return, self.episode_length = 0.0, 0
        return state["pending"]


class EnvLoop(EpisodeStream):
    """The env-stepping object: one env, acted on by `policy` at `epsilon(own steps)`.

    `act_s`, `env_s` (resets included) and `fold_s` (the n-step adder, and `sink` when given)
    accumulate the step's time by component, for the time breakdown."""

    def __init__(self, cfg: DQNConfig, index: int, policy: GreedyPolicy, epsilon: Callable[[int], float]):
        super().__init__(cfg, index)
        self.env = make_env(cfg.env_id, worker_env_cost(cfg, index), cfg.env_step_wait_us)
        self.policy, self.epsilon = policy, epsilon
        self.obs, _ = self.env.reset(seed=self.episode_seed)
        self.ended = False  # whether the last step ended an episode
        self.act_s = self.env_s = self.fold_s = 0.0

    def step(self, version: int, sink: Callable[[Transition], None] | None = None) -> list[Transition]:
        perf = time.perf_counter
        t0 = perf()
        action = self.policy.act(self.obs, self.epsilon(self.steps))
        t1 = perf()
        next_obs, reward, terminated, truncated, _ = self.env.step(action)
        t2 = perf()
        transitions = self.record(self.obs, action, reward, next_obs, terminated, truncated, version)
        if sink is not None:
            for transition in transitions:
                sink(transition)
        t3 = perf()
        self.ended = terminated or truncated
        if self.ended:
            self.obs, _ = self.env.reset(seed=self.episode_seed)
            self.env_s += perf() - t3  # a reset is env work too
        else:
            self.obs = next_obs
        self.act_s += t1 - t0
        self.env_s += t2 - t1
        self.fold_s += t3 - t2
        return transitions

    def state(self) -> dict:
        return {**super().state(), "policy_rng": self.policy.rng.bit_generator.state,
                "seconds": {"act": self.act_s, "env": self.env_s, "fold": self.fold_s}}

    def restore(self, state: dict) -> int:
        dropped = super().restore(state)
        self.policy.rng.bit_generator.state = state["policy_rng"]
        self.act_s, self.env_s, self.fold_s = (state["seconds"][k] for k in ("act", "env", "fold"))
        self.obs, _ = self.env.reset(seed=self.episode_seed)
        return dropped

    def close(self) -> None:
        self.env.close()


# ============================================================================== parking points
@dataclass(frozen=True)
class Stop:
    """An env-step count (summed over workers) where workers park: to evaluate, to save, or both."""

    env_steps: int
    evaluate: bool
    save: bool


def stops(cfg: DQNConfig) -> list[Stop]:
    """Every holdout checkpoint, and every multiple of checkpoint_every short of the end."""
    evals = set(checkpoint_steps(cfg.total_env_steps, cfg.eval_every))
    every = cfg.checkpoint_every
    saves = set(range(every, cfg.total_env_steps, every)) if every else set()
    return [Stop(s, s in evals, s in saves) for s in sorted(evals | saves)]


# ============================================================================== learning and bookkeeping
class LearnerLoop:
    """The learner-driving object (see the module docstring).

    `sources` turns on the per-source diagnostics (policy lag of every sampled transition, each
    source's share of the sampled batches) for designs that learn from several workers;
    single_env leaves it off, keeping its hot loop as it was. `after_update()` runs after every
    update (weight publication, resets). With `learner=None` (hogwild's main process) it keeps
    the clock, the log, the evaluator and the checkpoints, and the workers learn.
    """

    def __init__(self, architecture: str, cfg: DQNConfig, reporter: Reporter, learner: DQNLearner | None,
                 replay: ReplayBuffer | None = None, *, net=None, sources: int = 0,
                 after_update: Callable[[], None] | None = None):
        self.architecture, self.cfg, self.reporter = architecture, cfg, reporter
        self.learner, self.replay, self.after_update = learner, replay, after_update
        self.replay_rng = np.random.default_rng(rng_seeds(cfg)[1])
        self.ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
        self.lag = PolicyLag(seed=cfg.seed) if sources else None
        self.sampled = np.zeros(sources, dtype=np.int64) if sources else None
        self.evaluator = HoldoutEvaluator(cfg, learner.online if learner is not None else net)
        self.stops = stops(cfg)
        self.next_stop = 0  # index into stops
        self.clock, self.timers = Stopwatch(), Timers()
        self.sample_s = self.update_s = self.diag_s = 0.0  # hot-loop timers, folded into `timers` at the end
        self.loss_sum = 0.0  # TD losses since the last log
        self.logged = {"updates": 0, "episodes": 0, "length_sum": 0, "return_sum": 0.0}
        self.next_log = cfg.log_every
        self.next_save = cfg.checkpoint_every  # single_env, vector_env: the first save at or after this
        self.last_holdout: float | None = None
        self.resumed_from_env_steps, self.dropped_on_resume, self.saves = 0, 0, 0
        self._clock_before = 0.0  # training seconds before a resume
        self.epsilon_at_resume: list[float] | None = None  # each env stream's epsilon when it resumed

    def start_clock(self, workers: Callable[[], list[int]] | None = None) -> None:
        """(Re)start the training clock when the loop proper starts, so set-up (spawning workers,
        making envs, loading a checkpoint) is never throughput time; a resumed run continues
        its saved clock. `workers` lists the worker processes' pids: their CPU and this
        process's over the clock's time make the result's `cpu` (`cpu_summary`)."""
        self.clock = Stopwatch(already=self._clock_before, cpu=CpuMeter(workers))

    # ------------------------------------------------------------------ learning
    def owed(self, env_steps: int) -> int:
        return self.ratio.target_updates(env_steps) - self.learner.version

    def learn_owed(self, env_steps: int, limit: int | None = None) -> int:
        """Do the updates owed after `env_steps` env steps (at most `limit`); returns how many."""
        learner, replay, cfg, perf = self.learner, self.replay, self.cfg, time.perf_counter
        owed = self.ratio.target_updates(env_steps) - learner.version
        if limit is not None:
            owed = min(owed, limit)
        done = 0
        while done < owed and replay.size > 0:
            t0 = perf()
            batch = replay.sample(cfg.batch_size, self.replay_rng)
            t1 = perf()
            if self.lag is not None:
                self.lag.record(learner.version, batch["version"])
                self.sampled += np.bincount(batch["source"], minlength=len(self.sampled))
            t2 = perf()
            loss = learner.update(batch)  # also syncs the target on its period
            if not math.isfinite(loss):  # a float already: the check costs nothing
                raise self.diverged(f"non-finite TD loss ({loss})", learner.version, env_steps)
            self.loss_sum += loss
            if cfg.prioritized:
                replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
            t3 = perf()
            self.sample_s += t1 - t0
            self.diag_s += t2 - t1
            self.update_s += t3 - t2
            done += 1
            if self.after_update is not None:
                self.after_update()
        return done

    def diverged(self, reason: str, update: int, env_steps: int, max_abs_q: float | None = None) -> RunDiverged:
        """The stop of a run whose loss or Q went non-finite at `update`, with the holdout so far
        and the largest |Q| of the batch that showed it (NaN or inf: what it saw)."""
        if max_abs_q is None:
            q = self.learner.last_q_taken if self.learner is not None else None
            max_abs_q = float(q.abs().max()) if q is not None else float("nan")
        return RunDiverged(reason, update=update, env_steps=env_steps, max_abs_q=max_abs_q,
                           holdout_curve=[{"env_steps": r["env_steps"], "return_mean": r["return_mean"]}
                                          for r in self.evaluator.results], train_seconds=self.clock.elapsed())

    # ------------------------------------------------------------------ logging / evaluation
    def log_due(self, env_steps: int) -> bool:
        return env_steps >= self.next_log

    def log(self, env_steps: int, episodes: EpisodeStats, *, updates: int | None = None,
            loss_sum: float | None = None, q_taken=None, **scalars: float) -> None:
        """Log once, if due: throughput, the mean TD loss and episode return and length since the
        last log, q_mean of the latest batch, the policy-lag window, and `scalars`. `updates` and
        `loss_sum` (the losses since the last log) default to this loop's own learner's."""
        if env_steps < self.next_log:
            return
        self.next_log = (env_steps // self.cfg.log_every + 1) * self.cfg.log_every
        report, logged = self.reporter.scalar, self.logged
        steps_per_sec = env_steps / self.clock.elapsed()
        report("env_steps_per_sec", steps_per_sec, env_steps)
        if updates is None:
            updates, loss_sum, q_taken = self.learner.version, self.loss_sum, self.learner.last_q_taken
            self.loss_sum = 0.0
        if updates > logged["updates"]:
            report("td_loss", loss_sum / (updates - logged["updates"]), env_steps)  # mean since the last log
            if q_taken is not None:
                report("q_mean", float(q_taken.mean()), env_steps)  # latest batch
            if self.lag is not None:
                window = self.lag.window()
                report("policy_lag_mean", window["mean"], env_steps)
                report("policy_lag_p95", window["p95"], env_steps)
            logged["updates"] = updates
        if episodes.episodes > logged["episodes"]:  # means over the episodes finished since the last log
            finished = episodes.episodes - logged["episodes"]
            report("train_episode_return", (episodes.return_sum - logged["return_sum"]) / finished, env_steps)
            report("train_episode_length", (episodes.length_sum - logged["length_sum"]) / finished, env_steps)
            logged.update(episodes=episodes.episodes, return_sum=episodes.return_sum, length_sum=episodes.length_sum)
        for name, value in scalars.items():
            report(name, value, env_steps)
        self.reporter.progress(env_steps, self.cfg.total_env_steps, steps_per_sec, self.last_holdout)

    def evaluate(self, env_steps: int) -> dict:
        result = self.evaluator.evaluate_off_clock(env_steps, self.clock, self.timers)
        self.last_holdout = result["return_mean"]
        self.reporter.holdout(result)
        return result

    def maybe_evaluate(self, env_steps: int) -> dict | None:
        return self.evaluate(env_steps) if self.evaluator.due(env_steps) else None

    # ------------------------------------------------------------------ checkpointing
    def save_due(self, env_steps: int) -> bool:
        """For designs without parking (single_env, vector_env): the first chance at or after
        checkpoint_every env steps since the last save, short of the end."""
        return bool(self.cfg.checkpoint_every) and self.next_save <= env_steps < self.cfg.total_env_steps

    def save(self, env_steps: int, parts: dict) -> None:
        """Write this loop's state and the design's `parts` atomically, off the training clock."""
        self.clock.pause()
        began = time.perf_counter()
        self.next_save = env_steps + self.cfg.checkpoint_every
        self.saves += 1
        save_checkpoint(self.cfg.checkpoint_path, {**stamp(self.architecture, self.cfg), "env_steps": env_steps,
                                                   "train_seconds": self.clock.elapsed(),
                                                   "loop": self.state_dict(), **parts})
        self.timers.add("checkpoint", time.perf_counter() - began)
        self.clock.resume()

    def at_stop(self, env_steps: int, parts: Callable[[], dict]) -> bool:
        """Workers are parked at the next stop: evaluate and/or save there (`parts()` gives the
        design's own state); returns whether it was the last stop."""
        stop = self.stops[self.next_stop]
        assert env_steps == stop.env_steps, (env_steps, stop)
        if stop.evaluate:
            self.evaluate(env_steps)
        self.next_stop += 1
        if stop.save:
            self.save(env_steps, parts())
        if self.next_stop == len(self.stops):
            self.end_clock()
            return True
        return False

    def end_clock(self) -> None:
        """The run's last env step is learned from: stop the training clock here, so what follows
        (waiting for the workers to finish, joining them, closing envs and shared memory) is not
        training time. Counted, the teardown of 24 actor processes on 2 cores took 5-6 s of a 13 s
        run and read as a collapse past 8 actors (issue 21;
        tests/test_clock.py::test_the_training_clock_stops_before_teardown)."""
        if self.clock.running:
            self.clock.pause()

    def resume(self) -> dict | None:
        """The design's saved parts after restoring this loop's state, or None (a fresh start).
        The holdout results saved so far are reported again, so the run's record is whole."""
        hold_lock(self.cfg.checkpoint_path)  # taken already where experiments.train checked the path first
        saved = load_checkpoint(self.cfg.checkpoint_path)
        if saved is None:
            return None
        check_owner(saved, self.architecture, self.cfg)
        self.load_state_dict(saved["loop"])
        # The parking points are rebuilt from this config, whose checkpoint_every may differ from
        # the saved run's: the next one is the first past the saved env steps, never a saved index
        # (tests/test_resume.py::test_a_resume_with_another_checkpoint_period_parks_at_the_new_schedule).
        self.next_stop = next((i for i, stop in enumerate(self.stops) if stop.env_steps > saved["env_steps"]),
                              len(self.stops))
        self._clock_before = saved["train_seconds"]
        self.resumed_from_env_steps = saved["env_steps"]
        self.next_log = (saved["env_steps"] // self.cfg.log_every + 1) * self.cfg.log_every
        for result in self.evaluator.results:
            self.reporter.holdout(result)
        self.last_holdout = self.evaluator.results[-1]["return_mean"] if self.evaluator.results else None
        return saved

    def state_dict(self) -> dict:
        learner, replay = self.learner, self.replay
        return {
            "learner": learner.state_dict() if learner is not None else None,
            "replay": replay.state_dict() if replay is not None and self.cfg.checkpoint_replay else None,
            "replay_rng": self.replay_rng.bit_generator.state,
            "lag": self.lag.state_dict() if self.lag is not None else None,
            "sampled": None if self.sampled is None else self.sampled.copy(),
            "holdout": self.evaluator.results, "next_stop": self.next_stop, "next_save": self.next_save,
            "timers": self.timers.state_dict(),
            "hot_seconds": {"sample": self.sample_s, "update": self.update_s, "diagnostics": self.diag_s},
            "loss_sum": self.loss_sum, "logged": dict(self.logged), "saves": self.saves,
        }

    def load_state_dict(self, state: dict) -> None:
        if self.learner is not None:
            self.learner.load_state_dict(state["learner"])
        if self.replay is not None and state["replay"] is not None:
            self.replay.load_state_dict(state["replay"])
        self.replay_rng.bit_generator.state = state["replay_rng"]
        if self.lag is not None:
            self.lag.load_state_dict(state["lag"])
            self.sampled[:] = state["sampled"]
        self.evaluator.results = state["holdout"]
        self.next_stop, self.next_save = state["next_stop"], state["next_save"]
        self.timers.load_state_dict(state["timers"])
        hot = state["hot_seconds"]
        self.sample_s, self.update_s, self.diag_s = hot["sample"], hot["update"], hot["diagnostics"]
        self.loss_sum, self.logged, self.saves = state["loss_sum"], dict(state["logged"]), state["saves"]

    # ------------------------------------------------------------------ the result
    def result(self, *, env_steps: int, episodes: EpisodeStats, updates: int | None = None,
               components: dict[str, tuple[float, int]] | None = None, **extra) -> dict:
        """The run's result (architectures.results.run_result); `components` adds name -> (seconds,
        calls) to the time breakdown. A finished run deletes its checkpoint: a rerun starts afresh."""
        train_seconds = self.clock.elapsed()
        extra.setdefault("cpu", cpu_summary(self.clock, env_steps - self.resumed_from_env_steps))
        updates = self.learner.version if updates is None else updates
        parts = dict(components or {})
        if self.learner is not None:
            parts.update(sample=(self.sample_s, updates), update=(self.update_s, updates))
            if self.lag is not None:
                parts["diagnostics"] = (self.diag_s, updates)
        for name, (seconds, calls) in parts.items():
            self.timers.add(name, seconds, calls)
        self.evaluator.close()
        remove_checkpoint(self.cfg.checkpoint_path)
        return run_result(self.cfg, env_steps=env_steps, updates=updates, episodes=episodes.episodes,
                          train_seconds=train_seconds, ratio=self.ratio, timers=self.timers,
                          evaluator=self.evaluator, resumed_from_env_steps=self.resumed_from_env_steps,
                          dropped_on_resume=self.dropped_on_resume, epsilon_at_resume=self.epsilon_at_resume,
                          checkpoints_written=self.saves, **extra)
