"""actor_learner (Ape-X style): actor processes only act; one learner updates; replay joins them.

Same section order as single_env.py; what differs is the data flow:
- acting happens in `num_workers` spawned actor processes, each with its own env (seeded per
  worker) and a local copy of the Q-network;
- transitions travel actor -> learner through per-actor shared-memory rings
  (`shared.TransitionRing`) that the learner drains into the ONE replay buffer, which only the
  learner touches, so no sample can ever be half-written;
- syncing is explicit: every `weight_sync_period` updates the learner publishes its weights
  with a version number (`shared.WeightChannel`); actors pick them up between env steps
  without blocking the learner, and a watchdog fails the run if one stops picking them up;
- `utd` is enforced on the GLOBAL env-step count as Acme's rate limiter does: the learner
  waits when it is ahead, actors wait when it owes more than `utd_slack_steps` worth of updates;
- at every holdout checkpoint the actors park exactly on their share of the checkpoint's env
  steps, the learner catches up its owed updates and evaluates off the clock (no overshoot).

Run it without Sacred:  python -m architectures.actor_learner --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from architectures.config import DQNConfig
from architectures.diagnostics import LearnerLog, PolicyLag, name_bottleneck, shares
from architectures.dqn import DQNLearner, EpsilonSchedule, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator, checkpoint_steps
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay, transition_dtype
from architectures.results import run_result
from architectures.shared import (DONE, READY, RUNNING, STATUS_DTYPE, Control, SharedBlocks, TransitionRing,
                                  WeightChannel)
from architectures.workers import (Waiter, WorkerPool, check_weights_flow, run_worker,
                                   misbehave, warn_if_not_checkpointing, warn_if_oversubscribed,
                                   worker_fault)

RING_CAPACITY = 4096
"""Transitions an actor may hand off before the learner drains them (then the actor waits)."""
ACTOR_ROLES = ("env_step", "act", "n_step", "handoff", "weight_sync", "wait")


def worker_quota(env_steps: int, num_workers: int, index: int) -> int:
    """Worker `index`'s share of `env_steps`; the shares sum to env_steps exactly."""
    return env_steps // num_workers + (index < env_steps % num_workers)


def actor_epsilon(cfg: DQNConfig, index: int):
    """Epsilon as a function of this actor's own env steps."""
    if cfg.actor_epsilons == "apex":  # Horgan et al. 2018: fixed, spread over the actors
        eps = 0.4 ** (1 + 7 * index / max(1, cfg.num_workers - 1))
        return lambda own_steps: eps
    schedule = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    # The global step is estimated as N x this actor's steps: exact when the actors keep pace
    # (they park together at every checkpoint) and reproducible whatever the timing.
    return lambda own_steps: schedule(own_steps * cfg.num_workers)


# ============================================================================== acting (actor process)
def _actor(index: int, cfg: DQNConfig, specs: dict, ring_lock, weight_lock, errors, parent_pid: int,
           param_shapes: list[tuple]) -> None:
    run_worker("actor", index, specs, errors,
               lambda arrays: _act(index, cfg, arrays, ring_lock, weight_lock, parent_pid, param_shapes))


def _act(index, cfg, arrays, ring_lock, weight_lock, parent_pid, param_shapes) -> None:
    torch.set_num_threads(1)
    status, control = arrays["status"][index], Control(arrays["control"])
    ring = TransitionRing(arrays[f"ring{index}_records"], arrays[f"ring{index}_priorities"],
                          arrays[f"ring{index}_counters"], ring_lock, status)
    weights = WeightChannel(arrays["weights"], arrays["weights_header"], weight_lock, param_shapes)
    waiter = Waiter(control, status, parent_pid)
    all_steps = arrays["status"]["env_steps"]  # (N,) every actor's published env steps
    env = make_env(cfg.env_id, cfg.env_step_cost_us)
    episode_seeds = training_episode_seeds(cfg.seed, index)
    net = build_q_network(env.observation_space.shape, int(env.action_space.n), cfg.hidden_sizes,
                          cfg.layer_norm, cfg.seed)
    params = [p.detach().numpy() for p in net.parameters()]  # the policy acts through views of these
    act_root = np.random.SeedSequence(cfg.seed).spawn(2)[0]
    policy = GreedyPolicy(net, np.random.default_rng(act_root.spawn(cfg.num_workers)[index]))
    adder = NStepAdder(cfg.n_step, cfg.gamma, source=index)
    epsilon = actor_epsilon(cfg, index)
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    slack_updates = int(cfg.utd_slack_steps * ratio.ratio)
    stops = [worker_quota(c, cfg.num_workers, index) for c in checkpoint_steps(cfg.total_env_steps, cfg.eval_every)]
    fault = worker_fault(index)
    waiter.until(lambda: weights.latest_version() >= 0)  # published before the actors start
    version = weights.fetch(params, -1)
    status["weights_version"] = version
    status["state"] = READY
    waiter.until(lambda: control[Control.GO] == 1)
    status["state"] = RUNNING
    perf = time.perf_counter
    env_s = act_s = n_step_s = handoff_s = sync_s = wait_s = 0.0
    steps, episode_return, episode_length = 0, 0.0, 0
    obs, _ = env.reset(seed=next(episode_seeds))
    for checkpoint, stop_at in enumerate(stops):
        while steps < stop_at:
            # -------------------------------------------------------------- rate limiter
            if steps % 16 == 0:  # wait while the learner owes more than the slack in updates
                wait_s += waiter.until(lambda: ratio.target_updates(int(all_steps.sum()))
                                       - control[Control.LEARNER_VERSION] <= slack_updates)
            if fault and steps >= fault[1]:
                misbehave(fault[0])
            # -------------------------------------------------------------- syncing (pull weights, after any wait)
            t1 = perf()
            if not (fault and fault[0] == "freeze_weights" and steps >= fault[1]):
                new = weights.fetch(params, version)
                if new is not None:
                    version = new
                    status["weights_version"] = version
                    status["weight_fetches"] += 1
            # -------------------------------------------------------------- acting
            t2 = perf()
            sync_s += t2 - t1
            action = policy.act(obs, epsilon(steps))
            t3 = perf()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            steps += 1
            episode_return += float(reward)
            episode_length += 1
            t4 = perf()
            # -------------------------------------------------------------- hand-off
            transitions = adder.step(obs, action, reward, next_obs, terminated, truncated, version)
            t4b = perf()
            for transition in transitions:
                if not ring.has_room():
                    wait_s += waiter.until(ring.has_room)
                ring.write(transition, _priority(policy, transition, cfg) if cfg.prioritized else 0.0)
            ring.publish(steps)
            t5 = perf()
            if terminated or truncated:
                status["episodes"] += 1
                status["episode_length_sum"] += episode_length
                status["episode_return_sum"] += episode_return
                obs, _ = env.reset(seed=next(episode_seeds))
                episode_return, episode_length = 0.0, 0
                env_s += perf() - t5
            else:
                obs = next_obs
            act_s += t3 - t2
            env_s += t4 - t3
            n_step_s += t4b - t4
            handoff_s += t5 - t4b
            if steps % 256 == 0:
                waiter.check()
                _publish_times(status, env_s, act_s, n_step_s, handoff_s, sync_s, wait_s)
        # ------------------------------------------------------------------ park at the checkpoint
        _publish_times(status, env_s, act_s, n_step_s, handoff_s, sync_s, wait_s)
        status["parked"] = checkpoint + 1
        if checkpoint + 1 < len(stops):  # parked time is evaluation time: off every clock
            waiter.until(lambda: control[Control.EVAL_DONE] > checkpoint)
    env.close()
    status["state"] = DONE


def _publish_times(status, env_s, act_s, n_step_s, handoff_s, sync_s, wait_s) -> None:
    status["t_env_step"], status["t_act"], status["t_n_step"] = env_s, act_s, n_step_s
    status["t_handoff"], status["t_weight_sync"], status["t_wait"] = handoff_s, sync_s, wait_s


def _priority(policy: GreedyPolicy, t, cfg: DQNConfig) -> float:
    """Ape-X's initial priority: |n-step TD error| under the actor's local network."""
    bootstrap = float(policy.q_values(t.next_obs).max()) if t.discount > 0 else 0.0
    return abs(t.reward + t.discount * bootstrap - float(policy.q_values(t.obs)[t.action]))


# ============================================================================== the learner (main process)
def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    if cfg.backend == "ray":  # the same architecture with Ray actors: architectures/actor_learner_ray.py
        from architectures.actor_learner_ray import train as train_on_ray

        return train_on_ray(cfg, reporter)
    reporter = reporter or NullReporter()
    warn_if_not_checkpointing(cfg, "actor_learner")
    warn_if_oversubscribed(cfg.num_workers, "actor processes plus one learner")
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.torch_threads)
    started = time.perf_counter()
    probe = make_env(cfg.env_id)
    obs_shape, num_actions, obs_dtype = probe.observation_space.shape, int(probe.action_space.n), probe.observation_space.dtype
    probe.close()
    n = cfg.num_workers
    learner = DQNLearner(build_q_network(obs_shape, num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed), cfg)
    params = [p.detach().numpy() for p in learner.online.parameters()]
    replay = make_replay(cfg, obs_shape, obs_dtype)
    staleness = PolicyLag(seed=cfg.seed + 1)  # learner version at hand-off minus the acting version

    def sink(rows: np.ndarray, priorities: np.ndarray) -> None:
        staleness.record(learner.version, rows["version"])
        if cfg.prioritized:
            replay.extend(rows, priorities)  # the actors' initial priorities travel with the rows
        else:
            replay.extend(rows)

    replay_rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(2)[1])
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    evaluator = HoldoutEvaluator(cfg, learner.online)
    lag, sampled = PolicyLag(seed=cfg.seed), np.zeros(n, dtype=np.int64)
    timers = Timers()
    blocks, pool = SharedBlocks(), None
    try:
        control = Control.allocate(blocks)
        status = blocks.allocate("status", (n,), STATUS_DTYPE)
        record = transition_dtype(tuple(obs_shape), np.dtype(obs_dtype))
        ring_arrays = [TransitionRing.allocate(blocks, f"ring{i}", RING_CAPACITY, record) for i in range(n)]
        shapes = [tuple(p.shape) for p in params]
        weight_arrays = WeightChannel.allocate(blocks, shapes)
        pool = WorkerPool("actor", status, control, cfg.worker_timeout_s)
        ring_locks, weight_lock = [pool.ctx.Lock() for _ in range(n)], pool.ctx.Lock()
        weights = WeightChannel(weight_arrays["weights"], weight_arrays["weights_header"], weight_lock, shapes)
        weights.publish(params, 0)
        rings = [TransitionRing(**ring_arrays[i], lock=ring_locks[i], status_row=status[i]) for i in range(n)]
        pool.start(_actor, lambda i: (cfg, blocks.specs, ring_locks[i], weight_lock, pool.errors, os.getpid(), shapes))
        pool.wait_until(lambda: bool((status["state"] >= READY).all()), "the actors to start", max(120.0, cfg.worker_timeout_s))
        startup_seconds = time.perf_counter() - started
        control[Control.GO] = 1
        clock = Stopwatch()
        perf = time.perf_counter
        drain_s = sample_s = diag_s = update_s = publish_s = wait_s = 0.0
        drained = publishes = waits = 0
        log, last_holdout = LearnerLog(reporter, cfg.log_every), None
        last_check = time.monotonic()
        pending_publish = np.full(n, -1, dtype=np.int64)  # per actor: version not yet picked up
        pending_since = np.zeros(n, dtype=np.int64)  # ... and that actor's env steps when published
        checkpoint = 0
        while True:
            # -------------------------------------------------------------- hand-off (drain rings)
            t0 = perf()
            drained += sum(ring.drain(sink) for ring in rings)
            global_steps = sum(ring.env_steps_seen for ring in rings)
            t1 = perf()
            drain_s += t1 - t0
            # -------------------------------------------------------------- learning
            owed = ratio.target_updates(global_steps) - learner.version
            if owed > 0 and replay.size > 0:
                for _ in range(min(owed, 8)):  # then drain again, so the rings never fill up
                    t2 = perf()
                    batch = replay.sample(cfg.batch_size, replay_rng)
                    t2b = perf()
                    lag.record(learner.version, batch["version"])
                    sampled += np.bincount(batch["source"], minlength=n)
                    t3 = perf()
                    diag_s += t3 - t2b
                    log.loss_sum += learner.update(batch)
                    if cfg.prioritized:
                        replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
                    control[Control.LEARNER_VERSION] = learner.version
                    t4 = perf()
                    sample_s += t2b - t2
                    update_s += t4 - t3
                    # ------------------------------------------------------ syncing (publish weights)
                    if learner.version % cfg.weight_sync_period == 0:
                        weights.publish(params, learner.version)
                        publishes += 1
                        fresh = pending_publish < 0
                        pending_publish[fresh] = learner.version
                        pending_since[fresh] = status["env_steps"][fresh]
                        publish_s += perf() - t4
            elif (bool((status["parked"] > checkpoint).all())
                  and global_steps == evaluator.checkpoints[checkpoint]):
                # ---------------------------------------------------------- evaluation (actors parked)
                result = evaluator.evaluate_off_clock(global_steps, clock, timers)
                last_holdout = result["return_mean"]
                reporter.holdout(result)
                checkpoint += 1
                control[Control.EVAL_DONE] = checkpoint
                if checkpoint == len(evaluator.checkpoints):
                    break
            else:
                t6 = perf()
                time.sleep(2e-4)  # the learner is ahead of the data: wait for the actors
                wait_s += perf() - t6
                waits += 1
            # -------------------------------------------------------------- health and logging
            if time.monotonic() - last_check > 0.2:
                last_check = time.monotonic()
                pool.check()
                check_weights_flow(status, pending_publish, pending_since, weights.latest_version())
            if log.due(global_steps):
                steps_per_sec = global_steps / clock.elapsed()
                log.write(global_steps, steps_per_sec, learner, lag, int(status["episodes"].sum()),
                          float(status["episode_return_sum"].sum()))
                reporter.scalar("actor_weights_staleness_max",
                                float(learner.version - status["weights_version"].min()), global_steps)
                reporter.progress(global_steps, cfg.total_env_steps, steps_per_sec, last_holdout)

        # ------------------------------------------------------------------ summary
        train_seconds = clock.elapsed()
        pool.wait_until(lambda: bool((status["state"] == DONE).all()), "the actors to finish", 30.0)
        final = status.copy()
        for name, seconds, calls in (("handoff_drain", drain_s, drained), ("sample", sample_s, learner.version),
                                     ("update", update_s, learner.version), ("weight_publish", publish_s, publishes),
                                     ("diagnostics", diag_s, learner.version), ("wait", wait_s, waits)):
            timers.add(name, seconds, calls)
    finally:
        if pool is not None:
            pool.stop()
        blocks.close()
        evaluator.close()
    return _summary(cfg, learner, replay, evaluator, ratio, timers, final, lag, sampled, drained, publishes,
                    global_steps, train_seconds, startup_seconds, staleness)


def _summary(cfg, learner, replay, evaluator, ratio, timers, final, lag, sampled, drained, publishes,
             global_steps, train_seconds, startup_seconds, staleness) -> dict:
    n = cfg.num_workers
    actor_seconds = {role: float(final[f"t_{role}"].mean()) for role in ACTOR_ROLES}
    steps = final["env_steps"].astype(float)
    learner_parts = {name: row["seconds"] for name, row in timers.summary().items() if name != "eval"}
    handoff_write = 1e6 * float(final["t_handoff"].sum()) / max(1, drained)
    handoff_drain = timers.summary()["handoff_drain"]["us_per_call"]
    result = run_result(
        cfg, env_steps=global_steps, updates=learner.version, episodes=int(final["episodes"].sum()),
        train_seconds=train_seconds, ratio=ratio, timers=timers, evaluator=evaluator,
        num_workers=n, startup_seconds=startup_seconds, weight_publishes=publishes,
        worker_weights_versions=final["weights_version"].tolist(),
        worker_weight_fetches=final["weight_fetches"].tolist(),
        policy_lag=lag.summary(),
        # How stale the acting weights were when a transition reached the learner (no replay age).
        acting_staleness=staleness.summary(),
        worker_shares={"env_steps": (steps / steps.sum()).tolist(),
                       "replay": shares(replay.data["source"][:replay.size], n),
                       "sampled": (sampled / max(1, sampled.sum())).tolist()},
        worker_episodes=final["episodes"].tolist(),
        worker_mean_episode_length=(final["episode_length_sum"] / np.maximum(1, final["episodes"])).tolist(),
        worker_mean_episode_return=(final["episode_return_sum"] / np.maximum(1, final["episodes"])).tolist(),
        actor_time_breakdown={role: {"seconds_per_actor": s, "us_per_env_step": 1e6 * s * n / max(1, global_steps)}
                              for role, s in actor_seconds.items()},
        handoff_us_per_transition={"actor_write": handoff_write, "learner_drain": handoff_drain,
                                   "total": handoff_write + handoff_drain},
        bottleneck=name_bottleneck(train_seconds, {"learner": learner_parts, "actors": actor_seconds}),
    )
    for role in ("env_step", "act", "n_step", "handoff", "weight_sync"):
        result["component_costs_us"][f"actor_{role}"] = result["actor_time_breakdown"][role]["us_per_env_step"] / n
    return result


if __name__ == "__main__":
    from architectures.cli import main

    main(train)
