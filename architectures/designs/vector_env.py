"""vector_env: one process acts for `num_workers` envs, batched, and learns; the envs step in processes.

What many users pick today (SB3's SubprocVecEnv, gymnasium's AsyncVectorEnv), as EnvPool's async
mode runs it: the envs step in processes of their own (transport.vector_envs), and this process
acts on whichever envs have answered while the others step, never waiting for the slowest.
Same section order as single_env.py; what differs:
- acting is one batched forward pass for the envs that are ready (`GreedyPolicy.act_batch`);
  actions, observations and rewards travel through shared memory, never pickled, and an env
  whose step ends its episode resets at once with its stream's next seed (one
  `run.acting.EpisodeStream` per env: the per-episode training seeds single_env uses);
- learning overlaps the envs' stepping: while no env has answered, this process does the
  updates owed, one at a time; `utd` is updates per transition, as everywhere, and learning
  may owe no more than one vector step's worth (N x utd updates) when an env is sent on, the
  lag lockstep stepping had; the realised utd is logged;
- the envs are sent no further than the next holdout or save (`run.stops`): there every env
  has answered, the owed updates are done, then the holdout plays and/or the checkpoint is
  written, so each falls on its exact env step, and the run ends on total_env_steps; on
  resume every env starts a fresh episode and the n-step starts pending at the save are
  dropped and counted;
- every wait for an env gives up after `worker_timeout_s`, and a dead env process is named at
  once: the run fails with one line naming the env, as the other designs' supervision does.
A fixed seed's run is not reproduced step for step: which env answers first, and so the order
of the replay's rows and the updates each action was chosen after, follows the machine's timing.

Run it without Sacred:  python -m architectures vector_env --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import time

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.diagnostics import name_bottleneck
from architectures.core.dqn import build_learner
from architectures.core.envs import EnvSpec, env_spec, rng_seeds
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy
from architectures.core.rate_limiter import RateLimiter
from architectures.core.replay import make_replay
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import EpisodeStats, EpisodeStream, HeldObs, worker_env_cost
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.parts import EnvStreams
from architectures.run.worker_rows import per_worker_summary
from architectures.transport.vector_envs import VectorEnvs, vector_envs
from architectures.transport.workers import warn_if_oversubscribed

TIMES = ("act", "replay_add")


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    warn_if_oversubscribed(cfg.num_workers, "env processes plus the acting/learning process")
    torch.set_num_threads(cfg.learner_thread_count)
    spec = env_spec(cfg.env_id)
    with vector_envs("vector_env", spec, cfg, [worker_env_cost(cfg, i) for i in range(cfg.num_workers)]) as envs:
        return _train(cfg, reporter, envs, spec)


def _train(cfg: DQNConfig, reporter: Reporter, envs: VectorEnvs, spec: EnvSpec) -> dict:
    # ------------------------------------------------------------------ setup
    n = cfg.num_workers
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    streams = [EpisodeStream(cfg, i) for i in range(n)]  # seeds, n-step adder, episode totals per env
    epsilon = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    run = Run("vector_env", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, sources=n)
    policy = GreedyPolicy(learning.acting.net, np.random.default_rng(rng_seeds(cfg.seed)[0]))  # on the CPU
    pace = RateLimiter.for_vector_env(cfg)  # envs are sent on while learning owes at most a vector step
    seconds = dict.fromkeys(TIMES, 0.0)
    run.attach("acting", EnvStreams(streams, policy, envs, epsilon, seconds))
    run.resume()  # every env then starts a fresh episode with the seed its stream was on
    env_steps = run.resumed_from_env_steps
    held = HeldObs(envs.reset(range(n), [s.episode_seed for s in streams]))  # each env's observation now
    actions, acted = [0] * n, [0] * n  # each env's action in flight, and the learner version that chose it
    idle, sent = list(range(n)), env_steps  # envs waiting for an action; env steps sent so far
    perf = time.perf_counter
    run.start_clock(workers=lambda: envs.pids)
    run.curves.watch_roles(lambda: _roles(cfg, learning, envs, seconds, run.clock.elapsed()))  # busy roles, live
    while True:
        # ------------------------------------------------------------------ acting: the ready envs, batched
        stop = run.stops[run.next_stop].env_steps  # the next holdout or save, or the end: no env steps past it
        if idle and sent < stop:
            ids, idle = idle[:stop - sent], idle[stop - sent:]
            if not pace.can_insert(env_steps, learner.version):  # the utd holds: learning lags a vector step at most
                learning.learn_owed(env_steps, limit=pace.owed(env_steps, learner.version) - pace.slack_updates)
            t0 = perf()
            chosen = policy.act_batch(held.obs[ids], epsilon(env_steps)).tolist()
            for i, action in zip(ids, chosen):
                actions[i], acted[i] = action, learner.version
            seconds["act"] += perf() - t0
            envs.send(ids, chosen, [streams[i].upcoming_seed() for i in ids])
            sent += len(ids)

        # ------------------------------------------------------------------ learning, while the envs step
        ready = envs.ready()
        while not ready and learning.owed(env_steps) > 0 and replay.size > 0:
            learning.learn_owed(env_steps, limit=1)
            ready = envs.ready()

        # ------------------------------------------------------------------ evaluation / checkpoint (every env in)
        if not ready and not envs.flying:
            learning.learn_owed(env_steps)  # at the same update count single_env would have
            if run.at_stop(env_steps):
                break
            continue

        # ------------------------------------------------------------------ hand-off into replay
        ready = ready or envs.recv()
        t0 = perf()
        for i in ready:
            acted_on, reward, next_obs, terminated, truncated = held.take(envs, i)
            for transition in streams[i].record(acted_on, actions[i], reward, next_obs, terminated, truncated,
                                                acted[i]):
                replay.add(transition)
        seconds["replay_add"] += perf() - t0
        env_steps += len(ready)
        idle += ready

        # ------------------------------------------------------------------ syncing
        # Nothing to do: the policy acts through numpy views of the learner's own weights (a CUDA
        # learner's host copy: `learning` refreshes it every weight_sync_period updates).

        # ------------------------------------------------------------------ logging
        if run.log_due(env_steps):
            run.log(env_steps, sum((s.stats for s in streams), EpisodeStats()),
                    realised_utd=learning.limiter.realised(learner.version, env_steps))

    return _result(cfg, run, learning, envs, streams, seconds, env_steps)


def _result(cfg: DQNConfig, run: Run, learning: ReplayLearning, envs: VectorEnvs, streams: list[EpisodeStream],
            seconds: dict, env_steps: int) -> dict:
    """The run's result: the time breakdown of this process and of the envs' round trip, the
    bottleneck, and each env's share of the data."""
    trip, steps = envs.seconds, max(1, envs.answered)
    blocked = trip["blocked"]
    result = run.result(
        env_steps=env_steps, episodes=sum((s.stats for s in streams), EpisodeStats()), num_workers=cfg.num_workers,
        components={"act": (seconds["act"], steps), "replay_add": (seconds["replay_add"], steps),
                    "send": (trip["send"], steps), "recv": (trip["recv"] - blocked, steps),
                    "env_wait": (blocked, steps)},
        policy_lag=learning.lag.summary(),
        # An env step's round trip, per env step: the command's way to the env, the env's own step
        # (and reset), and the answer's wait until this process took it (time it was busy elsewhere).
        round_trip_us={part: 1e6 * trip[part] / steps for part in ("to_env", "env_step", "to_main")},
        **per_worker_summary(_stream_status(streams), learning.replay.data["source"][:learning.replay.size],
                             learning.sampled_counts))
    roles = _roles(cfg, learning, envs, seconds, result["train_seconds"])
    result["bottleneck"] = name_bottleneck(result["train_seconds"], roles, result.get("cpu"))
    return result


def _roles(cfg: DQNConfig, learning: ReplayLearning, envs: VectorEnvs, seconds: dict, train_seconds: float) -> dict:
    """This process's seconds per component and an env's (the mean over envs): the bottleneck's
    roles, at the end and on the live curves."""
    trip = envs.seconds
    blocked = trip["blocked"]
    main_parts = {"act": seconds["act"], "replay_add": seconds["replay_add"], "sample": learning.sample_s,
                  "update": learning.update_s, "send_recv": trip["send"] + trip["recv"] - blocked, "wait": blocked}
    env_busy = envs.env_seconds()["env_step"] / cfg.num_workers
    return {"learner": main_parts, "envs": {"env_step": env_busy, "wait": max(0.0, train_seconds - env_busy)}}


def _stream_status(streams: list[EpisodeStream]) -> np.ndarray:
    """Per-env counters in the layout per_worker_summary reads."""
    rows = np.zeros(len(streams), dtype=[("env_steps", np.int64), ("episodes", np.int64),
                                         ("episode_length_sum", np.int64), ("episode_return_sum", np.float64)])
    for row, s in zip(rows, streams):
        row["env_steps"], row["episodes"] = s.steps, s.stats.episodes
        row["episode_length_sum"], row["episode_return_sum"] = s.stats.length_sum, s.stats.return_sum
    return rows
