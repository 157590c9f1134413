"""hogwild: worker processes act AND learn, writing into one set of shared parameters, lock-free.

Asynchronous one-step Q-learning (Mnih et al. 2016) in the Hogwild! style (Niu et al. 2011),
with the suite's replay and update. Same section order as single_env.py; what differs:
- `num_workers` spawned processes each run their own env and compute DQN gradients against
  the SHARED online network (torch shared memory), sampling from a replay of their own, or
  from one replay in shared memory that every worker writes to (`hogwild_replay=shared`:
  shared.SharedReplay, lock-free reads that never see a half-written row);
- each applies its Adam step straight into the shared parameters, with no lock, or inside one
  cross-process lock with `hogwild_lock=true`, the comparison for "are updates overwritten?";
- Adam's state is shared (created and moved to shared memory before any worker starts: lazily
  created state would be silently private) or `per_worker`, as `optimizer_state` says;
- the target network is shared too and synced on the global update count;
- `utd` holds in aggregate: each worker does utd updates per env step of its own;
- races are measured, not assumed: a worker's step "overlaps" when another worker is inside
  its own optimizer step at the same time (per-worker in-flight flags), and the "version gap"
  counts the updates other workers applied while this one computed its gradient.
The main process only supervises, logs and evaluates the shared weights at the holdout
checkpoints, where the workers park exactly on their share of the env steps.

Run it without Sacred:  python -m architectures.hogwild --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import copy
import os
import time

import numpy as np
import torch
import torch.multiprocessing  # noqa: F401 - registers the reductions that pass shared tensors to workers

from architectures.actor_learner import actor_epsilon, worker_quota
from architectures.config import ConfigError, DQNConfig
from architectures.diagnostics import shares
from architectures.dqn import DQNLearner, FusedAdam, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator, checkpoint_steps
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay, transition_dtype
from architectures.results import run_result
from architectures.shared import DONE, READY, RUNNING, STATUS_DTYPE, Control, SharedBlocks, SharedReplay
from architectures.workers import (Waiter, WorkerPool, misbehave, run_worker, warn_if_not_checkpointing,
                                   warn_if_oversubscribed, worker_fault)

WORKER_TIMES = ("env_step", "act", "sample", "gradient", "apply", "wait")


# ============================================================================== a worker: acting and learning
def _worker(index: int, cfg: DQNConfig, specs: dict, online, target, optimizer_state, lock, replay_lock, errors,
            parent_pid: int) -> None:
    run_worker("worker", index, specs, errors, lambda arrays: _act_and_learn(
        index, cfg, arrays, online, target, optimizer_state, lock, replay_lock, parent_pid))


def _act_and_learn(index, cfg, arrays, online, target, optimizer_state, lock, replay_lock, parent_pid) -> None:
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(1)
    status, control = arrays["status"][index], Control(arrays["control"])
    all_status, in_flight = arrays["status"], arrays["in_flight"][:, 0]  # (N,) flags, one cache line each
    target_epoch = arrays["target_epoch"]
    waiter = Waiter(control, status, parent_pid)
    env = make_env(cfg.env_id, cfg.env_step_cost_us)
    episode_seeds = training_episode_seeds(cfg.seed, index)
    learner = DQNLearner(online, cfg, target=target, optimizer_state=optimizer_state)  # per_worker: state is None
    act_seed, replay_seed = np.random.SeedSequence(cfg.seed).spawn(2)
    policy = GreedyPolicy(online, np.random.default_rng(act_seed.spawn(cfg.num_workers)[index]))
    if cfg.hogwild_replay == "shared":  # one ring, every worker's rows, in shared memory
        replay = SharedReplay(arrays["replay_data"], arrays["replay_seq"], arrays["replay_counters"], replay_lock)
    else:  # this worker's own
        replay = make_replay(cfg.replace(buffer_size=max(1, cfg.buffer_size // cfg.num_workers)),
                             env.observation_space.shape, env.observation_space.dtype)
    replay_rng = np.random.default_rng(replay_seed.spawn(cfg.num_workers)[index])
    adder = NStepAdder(cfg.n_step, cfg.gamma, source=index)
    epsilon = actor_epsilon(cfg, index)
    ratio = UpdateRatio(cfg.utd, worker_quota(cfg.learning_starts, cfg.num_workers, index))
    stops = [worker_quota(c, cfg.num_workers, index) for c in checkpoint_steps(cfg.total_env_steps, cfg.eval_every)]
    fault = worker_fault(index)
    status["state"] = READY
    waiter.until(lambda: control[Control.GO] == 1)
    status["state"] = RUNNING
    perf = time.perf_counter
    times = dict.fromkeys(WORKER_TIMES, 0.0)
    steps, updates, episode_return, episode_length = 0, 0, 0.0, 0
    obs, _ = env.reset(seed=next(episode_seeds))
    for checkpoint, stop_at in enumerate(stops):
        while steps < stop_at:
            # -------------------------------------------------------------- acting
            if fault and steps >= fault[1]:
                misbehave(fault[0])
            t0 = perf()
            action = policy.act(obs, epsilon(steps))  # reads the shared weights as they are now
            t1 = perf()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            steps += 1
            for transition in adder.step(obs, action, reward, next_obs, terminated, truncated, 0):
                replay.add(transition)
            episode_return += float(reward)
            episode_length += 1
            if terminated or truncated:
                status["episodes"] += 1
                status["episode_length_sum"] += episode_length
                status["episode_return_sum"] += episode_return
                obs, _ = env.reset(seed=next(episode_seeds))
                episode_return, episode_length = 0.0, 0
            else:
                obs = next_obs
            t2 = perf()
            times["act"] += t1 - t0
            times["env_step"] += t2 - t1
            # -------------------------------------------------------------- learning
            while ratio.target_updates(steps) > updates and replay.size > 0:
                t3 = perf()
                batch = replay.sample(cfg.batch_size, replay_rng)
                version_before = int(all_status["updates"].sum())
                t4 = perf()
                status["loss_sum"] += learner.compute_gradient(batch)  # reads the shared weights, no lock
                t5 = perf()
                # ---------------------------------------------------------- syncing: the shared write
                if cfg.hogwild_lock:
                    lock.acquire()
                in_flight[index] = 1
                overlapped = bool(in_flight.sum() > 1)  # another worker is mid-step right now
                learner.apply_gradient(sync_target=False)
                in_flight[index] = 0
                if cfg.hogwild_lock:
                    lock.release()
                updates += 1
                status["updates"] = updates
                status["overlaps"] += overlapped
                status["version_gap_sum"] += int(all_status["updates"].sum()) - version_before - 1
                epoch = int(all_status["updates"].sum()) // cfg.target_update_period
                if epoch > target_epoch[0]:  # the global count crossed a target period
                    target_epoch[0] = epoch
                    learner.sync_target()
                t6 = perf()
                times["sample"] += t4 - t3
                times["gradient"] += t5 - t4
                times["apply"] += t6 - t5
            status["env_steps"] = steps
            if steps % 256 == 0:
                waiter.check()
                _publish_times(status, times)
        # ------------------------------------------------------------------ park at the checkpoint
        _publish_times(status, times)
        if cfg.hogwild_replay == "shared":
            status["replay_resampled"], status["replay_write_waits"] = replay.resampled, replay.write_waits
        status["env_steps"] = steps
        status["parked"] = checkpoint + 1
        if checkpoint + 1 < len(stops):
            waiter.until(lambda: control[Control.EVAL_DONE] > checkpoint)
    env.close()
    status["adam_steps"] = float(learner.optimizer.steps[0])  # what this worker's Adam state has counted
    status["state"] = DONE


def _publish_times(status, times: dict) -> None:
    status["t_env_step"], status["t_act"], status["t_sample"] = times["env_step"], times["act"], times["sample"]
    status["t_gradient"], status["t_apply"] = times["gradient"], times["apply"]


# ============================================================================== the main process: supervise, evaluate
def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    warn_if_not_checkpointing(cfg, "hogwild")
    warn_if_oversubscribed(cfg.num_workers, "worker processes")
    if cfg.prioritized:  # the workers would never update priorities: sampling would silently be uniform
        raise ConfigError("prioritized: hogwild workers do not update priorities; use single_env or actor_learner "
                          "for prioritized replay (got true)")
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.torch_threads)
    started = time.perf_counter()
    probe = make_env(cfg.env_id)
    obs_shape, num_actions = probe.observation_space.shape, int(probe.action_space.n)
    record = transition_dtype(obs_shape, probe.observation_space.dtype)
    probe.close()
    n = cfg.num_workers
    online = build_q_network(obs_shape, num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed).share_memory()
    target = copy.deepcopy(online).requires_grad_(False).share_memory()
    optimizer_state = None
    if cfg.optimizer_state == "shared":  # created and shared BEFORE any worker exists
        adam = FusedAdam(list(online.parameters()), lr=cfg.lr, eps=cfg.adam_eps)
        optimizer_state = {key: [t.share_memory_() for t in getattr(adam, key)]
                           for key in ("exp_avgs", "exp_avg_sqs", "steps")}
    evaluator = HoldoutEvaluator(cfg, online)
    timers = Timers()
    blocks, pool = SharedBlocks(), None
    try:
        control = Control.allocate(blocks)
        status = blocks.allocate("status", (n,), STATUS_DTYPE)
        blocks.allocate("in_flight", (n, 8), np.int64)
        blocks.allocate("target_epoch", (8,), np.int64)
        pool = WorkerPool("worker", status, control, cfg.worker_timeout_s)
        lock, replay = pool.ctx.Lock(), None
        if cfg.hogwild_replay == "shared":  # one ring for every worker, its lock only for reserving slots
            replay = SharedReplay(**SharedReplay.allocate(blocks, "replay", cfg.buffer_size, record),
                                  lock=pool.ctx.Lock())
        pool.start(_worker, lambda i: (cfg, blocks.specs, online, target, optimizer_state, lock,
                                       replay and replay.lock, pool.errors, os.getpid()))
        pool.wait_until(lambda: bool((status["state"] >= READY).all()), "the workers to start",
                        max(120.0, cfg.worker_timeout_s))
        startup_seconds = time.perf_counter() - started
        control[Control.GO] = 1
        clock = Stopwatch()
        checkpoint, next_log, last_holdout = 0, cfg.log_every, None
        logged = {"updates": 0, "loss_sum": 0.0, "episodes": 0, "return_sum": 0.0}
        while True:
            time.sleep(1e-3)
            pool.check()
            global_steps = int(status["env_steps"].sum())
            # -------------------------------------------------------------- logging / evaluation
            if global_steps >= next_log:
                next_log = (global_steps // cfg.log_every + 1) * cfg.log_every
                last_holdout = _log(reporter, cfg, status, logged, global_steps, clock.elapsed(), last_holdout)
            if bool((status["parked"] > checkpoint).all()) and global_steps == evaluator.checkpoints[checkpoint]:
                result = evaluator.evaluate_off_clock(global_steps, clock, timers)  # shared weights, workers parked
                last_holdout = result["return_mean"]
                reporter.holdout(result)
                checkpoint += 1
                control[Control.EVAL_DONE] = checkpoint
                if checkpoint == len(evaluator.checkpoints):
                    break
        train_seconds = clock.elapsed()
        pool.wait_until(lambda: bool((status["state"] == DONE).all()), "the workers to finish", 30.0)
        final = status.copy()
        replay_shares = shares(replay.data["source"][:replay.size], n) if replay else None  # whose rows it holds
        adam_steps = float(optimizer_state["steps"][0]) if optimizer_state is not None else None
    finally:
        if pool is not None:
            pool.stop()
        blocks.close()
        evaluator.close()
    return _summary(cfg, evaluator, timers, final, global_steps, train_seconds, startup_seconds, adam_steps,
                    replay_shares)


def _log(reporter, cfg, status, logged, global_steps, elapsed, last_holdout):
    steps_per_sec = global_steps / elapsed
    reporter.scalar("env_steps_per_sec", steps_per_sec, global_steps)
    updates, loss_sum = int(status["updates"].sum()), float(status["loss_sum"].sum())
    if updates > logged["updates"]:
        reporter.scalar("td_loss", (loss_sum - logged["loss_sum"]) / (updates - logged["updates"]), global_steps)
        reporter.scalar("overlap_fraction", float(status["overlaps"].sum()) / updates, global_steps)
        logged["updates"], logged["loss_sum"] = updates, loss_sum
    episodes, return_sum = int(status["episodes"].sum()), float(status["episode_return_sum"].sum())
    if episodes > logged["episodes"]:
        reporter.scalar("train_episode_return", (return_sum - logged["return_sum"]) / (episodes - logged["episodes"]),
                        global_steps)
        logged["episodes"], logged["return_sum"] = episodes, return_sum
    reporter.progress(global_steps, cfg.total_env_steps, steps_per_sec, last_holdout)
    return last_holdout


def _summary(cfg, evaluator, timers, final, global_steps, train_seconds, startup_seconds, adam_steps,
             replay_shares) -> dict:
    n = cfg.num_workers
    updates = int(final["updates"].sum())
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    per_worker = {name: float(final[f"t_{name}"].mean()) for name in WORKER_TIMES if name != "wait"}
    steps = final["env_steps"].astype(float)
    result = run_result(
        cfg, env_steps=global_steps, updates=updates, episodes=int(final["episodes"].sum()),
        train_seconds=train_seconds, ratio=ratio, timers=timers, evaluator=evaluator, num_workers=n,
        startup_seconds=startup_seconds, hogwild_lock=cfg.hogwild_lock, optimizer_state=cfg.optimizer_state,
        hogwild_replay=cfg.hogwild_replay,
        # Share of optimizer steps during which another worker was also inside its own step.
        overlap_fraction=float(final["overlaps"].sum()) / max(1, updates),
        # Updates other workers applied while one worker computed its gradient (gradient staleness).
        mean_version_gap=float(final["version_gap_sum"].sum()) / max(1, updates),
        worker_updates=final["updates"].tolist(),
        # Adam's step count as each worker saw it at the end: the total with a shared state, the
        # worker's own updates with per-worker states (the test of which one was in force).
        worker_adam_steps=final["adam_steps"].tolist(),
        # The shared Adam step counter counts every worker's steps when the state is shared.
        shared_adam_steps=adam_steps,
        worker_shares={"env_steps": (steps / steps.sum()).tolist(),
                       "updates": (final["updates"] / max(1, updates)).tolist(),
                       # whose rows the shared replay held at the end (each local replay holds its own)
                       **({"replay": replay_shares} if replay_shares is not None else {})},
        worker_episodes=final["episodes"].tolist(),
        worker_mean_episode_length=(final["episode_length_sum"] / np.maximum(1, final["episodes"])).tolist(),
        worker_time_breakdown={name: {"seconds_per_worker": s, "us_per_env_step": 1e6 * s * n / max(1, global_steps)}
                               for name, s in per_worker.items()},
    )
    if replay_shares is not None:  # rows a sampler redrew because a writer was inside them
        result["replay_resampled_rows"] = int(final["replay_resampled"].sum())
        result["replay_write_waits"] = int(final["replay_write_waits"].sum())
    for name, s in per_worker.items():
        result["component_costs_us"][f"worker_{name}"] = 1e6 * s * n / max(1, global_steps)
    return result


if __name__ == "__main__":
    from architectures.cli import main

    main(train)
