"""hogwild: worker processes act AND learn, writing into one set of shared parameters, lock-free.

Asynchronous one-step Q-learning (Mnih et al. 2016) in the Hogwild! style (Niu et al. 2011),
with the suite's replay and update. Same section order as single_env.py; what differs:
- `num_workers` spawned processes each run their own env and compute DQN gradients against
  the SHARED online network (torch shared memory), sampling from a replay of their own, or
  from one replay in shared memory that every worker writes to (`hogwild_replay=shared`:
  channels.SharedReplay, lock-free reads that never see a half-written row);
- each applies its Adam step straight into the shared parameters, with no lock, or inside one
  cross-process lock with `hogwild_lock=true`, the comparison for "are updates overwritten?";
- Adam's state is shared (created and moved to shared memory before any worker starts: lazily
  created state would be silently private) or `per_worker`, as `optimizer_state` says;
- the target network is shared too and synced on the global update count;
- `utd` holds in aggregate, exactly at every sync point: each worker owes its share of the
  run's updates due by its share of the env steps (schedules.WorkerShare);
- races are measured, not assumed: a worker's step "overlaps" when another worker is inside
  its own optimizer step at the same time (per-worker in-flight flags), and the "version gap"
  counts the updates other workers applied while this one computed its gradient.
The main process only supervises, logs, evaluates the shared weights and saves checkpoints at
the sync points (`run.sync_points.stops`), where the workers stop exactly on their share of the env
steps. A save holds the shared networks and Adam state, the shared replay or every worker's
own, and every worker's stream, RNGs and (per_worker) Adam moments; a resumed worker starts a
fresh episode.

Run it without Sacred:  python -m architectures hogwild --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.multiprocessing  # noqa: F401 - registers the reductions that pass shared tensors to workers

from architectures.core.config import ConfigError, DQNConfig
from architectures.core.dqn import DQNLearner, FusedAdam
from architectures.core.envs import EnvSpec, env_spec, rng_seeds
from architectures.core.errors import RunDiverged
from architectures.core.limits import worker_replay_size
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy, build_q_network
from architectures.core.replay import make_replay, transition_dtype
from architectures.core.rate_limiter import RateLimiter
from architectures.designs.hogwild_stats import hogwild_figures, hogwild_summary, write_figures
from architectures.run.acting import EnvLoop, actor_epsilon
from architectures.run.base import LearningLog, Run
from architectures.run.parts import WorkerStates
from architectures.run.sync_points import all_at_sync_point, stops, wait_at_sync_point, worker_stops
from architectures.run.worker_rows import (
    check_design_memory,
    publish_times,
    status_episodes,
    write_episodes,
)
from architectures.transport.notifier import Waiter
from architectures.transport.channels import SharedReplay
from architectures.transport.shared import DONE, LOCK_BYTES, STATUS_DTYPE, Control, block_bytes
from architectures.transport.workers import warn_if_oversubscribed, with_fault, worker_fault, worker_pool

ADAM_KEYS = ("exp_avgs", "exp_avg_sqs", "steps")


def shared_memory_needs(cfg: DQNConfig, spec: EnvSpec, param_shapes: list[tuple]) -> dict[str, int]:
    """What a run maps in /dev/shm, by part: our blocks, and torch's shared tensors (one segment
    per tensor: online, target and, when shared, Adam's two moments and step counts)."""
    n = cfg.num_workers
    tensor = sum(block_bytes(shape, np.float32) for shape in param_shapes)
    needs = {"status": block_bytes((n,), STATUS_DTYPE) + block_bytes(Control.SHAPE, np.int64)
             + block_bytes((n, 8), np.int64) + block_bytes((8,), np.int64),
             "networks": 2 * tensor, "locks": 4 * LOCK_BYTES}  # the update lock, the replay's, the error queue's two
    if cfg.optimizer_state == "shared":
        needs["adam state"] = 2 * tensor + len(param_shapes) * block_bytes((), np.float32)
    if cfg.hogwild_replay == "shared":
        needs["shared replay"] = (block_bytes((cfg.buffer_size,), transition_dtype(spec.obs_shape, spec.obs_dtype))
                                  + block_bytes((cfg.buffer_size,), np.int64) + block_bytes((8,), np.int64))
    return needs


def preflight(cfg: DQNConfig) -> None:
    if cfg.device != "cpu":  # the workers step one set of parameters in shared CPU memory
        raise ConfigError(f"device: hogwild's workers write into shared parameters in CPU memory; it runs on the "
                          f"cpu only (got {cfg.device!r}); actor_learner or single_env put the learner on CUDA")
    if cfg.prioritized:  # the workers would never update priorities: sampling would silently be uniform
        raise ConfigError("prioritized: hogwild workers do not update priorities; use single_env or actor_learner "
                          "for prioritized replay (got true)")
    check_design_memory(cfg, shared_memory_needs,
                        f"hogwild with {cfg.num_workers} worker(s) and a {cfg.hogwild_replay} replay")


LOG_WAIT_S = 0.02
"""The main process's longest block between looks at the workers' counters (logging, health)."""


@dataclass
class WorkerArgs:
    """What worker process `index` is given beside the shared blocks (transport.workers.run_worker)."""

    cfg: DQNConfig
    online: Any  # the shared networks (torch shared memory)
    target: Any
    optimizer_state: dict | None  # Adam's shared moments, or None: per_worker
    lock: Any  # hogwild_lock: the one update lock
    replay_lock: Any  # hogwild_replay=shared: its slot-reserving lock
    state_pipe: Any  # its checkpoint state goes to the main process on this
    resume: dict | None  # its saved state and the sync point of a resumed run


# ============================================================================== a worker: acting and learning
class Worker:
    """One hogwild worker: its env loop acting on the shared weights, its replay (own or shared), its
    learner writing gradients into the shared parameters; `learn_owed` does the updates its share of the
    run's utd owes, `save`/`restore` its part of a checkpoint."""

    def __init__(self, index: int, arrays: dict, args: WorkerArgs):
        cfg = args.cfg
        self.cfg, self.index, self.lock, self.optimizer_state = cfg, index, args.lock, args.optimizer_state
        self.status, self.all_status = arrays["status"][index], arrays["status"]
        self.in_flight, self.target_epoch = arrays["in_flight"][:, 0], arrays["target_epoch"]  # (N,) flags, a line each
        self.learner = DQNLearner(args.online, cfg, target=args.target, optimizer_state=args.optimizer_state)
        act_seed, replay_seed = rng_seeds(cfg.seed)
        policy = GreedyPolicy(args.online, np.random.default_rng(act_seed.spawn(cfg.num_workers)[index]))
        self.loop = EnvLoop(cfg, index, policy, actor_epsilon(cfg, index))  # acting on the shared weights as they are
        if cfg.hogwild_replay == "shared":  # one ring, every worker's rows, in shared memory
            self.replay = SharedReplay(arrays["replay_data"], arrays["replay_seq"], arrays["replay_counters"],
                                       args.replay_lock)
        else:  # this worker's own
            space = self.loop.env.observation_space
            self.replay = make_replay(cfg.replace(buffer_size=worker_replay_size(cfg)), space.shape, space.dtype)
        self.replay_rng = np.random.default_rng(replay_seed.spawn(cfg.num_workers)[index])
        self.stops = stops(cfg)
        self.limiter = RateLimiter.for_worker(cfg, index, [stop.env_steps for stop in self.stops])
        self.times = {name: float(self.status[f"t_{name}"]) for name in ("sample", "gradient", "apply")}
        self.updates = int(self.status["updates"])
        self.counted = int(self.status["replay_resampled"]), int(self.status["replay_write_waits"])  # before a resume

    def restore(self, saved: dict) -> None:
        """A fresh episode; everything else as saved."""
        self.loop.restore(saved["actor"])
        self.replay_rng.bit_generator.state = saved["replay_rng"]
        if saved["replay"] is not None:
            self.replay.load_state_dict(saved["replay"])
        if saved["adam"] is not None:
            self.learner.optimizer.load_state_dict(saved["adam"])

    def save(self) -> dict:
        cfg = self.cfg
        return {"actor": self.loop.save(), "replay_rng": self.replay_rng.bit_generator.state,
                "replay": self.replay.state_dict() if cfg.hogwild_replay == "local" and cfg.checkpoint_replay else None,
                "adam": self.learner.optimizer.state_dict() if self.optimizer_state is None else None}

    def learn_owed(self) -> None:
        """The updates this worker's share of utd owes after its env steps, each written into the shared weights."""
        cfg, status, all_status, perf = self.cfg, self.status, self.all_status, time.perf_counter
        while self.limiter.can_sample(self.loop.steps, self.updates) and self.replay.size > 0:
            t3 = perf()
            batch = self.replay.sample(cfg.batch_size, self.replay_rng)
            version_before = int(all_status["updates"].sum())
            t4 = perf()
            loss = self.learner.compute_gradient(batch)  # reads the shared weights, no lock
            if not math.isfinite(loss):  # the shared weights are poisoned for every worker: stop the run
                raise RunDiverged(f"non-finite TD loss ({loss}) in worker {self.index}", update=int(
                    all_status["updates"].sum()), env_steps=int(all_status["env_steps"].sum()),
                    max_abs_q=float(self.learner.last_q_taken.abs().max()))
            status["loss_sum"] += loss
            t5 = perf()
            self.write(version_before)
            t6 = perf()
            self.times["sample"] += t4 - t3
            self.times["gradient"] += t5 - t4
            self.times["apply"] += t6 - t5

    def write(self, version_before: int) -> None:
        """Syncing: the gradient into the shared weights (under the lock, or racing), the target on the global period."""
        cfg, status, all_status = self.cfg, self.status, self.all_status
        if cfg.hogwild_lock:
            self.lock.acquire()
        self.in_flight[self.index] = 1
        overlapped = bool(self.in_flight.sum() > 1)  # another worker is mid-step right now
        self.learner.apply_gradient(sync_target=False)
        self.in_flight[self.index] = 0
        if cfg.hogwild_lock:
            self.lock.release()
        self.updates += 1
        status["updates"] = self.updates
        status["overlaps"] += overlapped
        status["version_gap_sum"] += int(all_status["updates"].sum()) - version_before - 1
        epoch = int(all_status["updates"].sum()) // cfg.target_update_period
        if epoch > self.target_epoch[0]:  # the global count crossed a target period
            self.target_epoch[0] = epoch
            self.learner.sync_target()

    def publish(self) -> None:
        """Its times and counters into its status row, for the main process (at the log's cadence and at a stop)."""
        publish_times(self.status, {"env_step": self.loop.env_s + self.loop.fold_s, "act": self.loop.act_s,
                                    **self.times})

    def before_sync_point(self) -> None:
        status = self.status
        self.publish()
        if self.cfg.hogwild_replay == "shared":
            status["replay_resampled"] = self.counted[0] + self.replay.resampled  # this process's, after the saved
            status["replay_write_waits"] = self.counted[1] + self.replay.write_waits
        status["env_steps"] = self.loop.steps
        status["adam_steps"] = float(self.learner.optimizer.steps[0])  # what this worker's Adam state has counted


def _act_and_learn(index: int, arrays: dict, waiter: Waiter, args: WorkerArgs) -> None:
    # ------------------------------------------------------------------ setup
    cfg = args.cfg
    torch.set_num_threads(1)
    control = Control(arrays["control"])
    worker = Worker(index, arrays, args)
    first_stop = 0
    if args.resume is not None:
        worker.restore(args.resume)
        first_stop = args.resume["next_stop"]
    loop, replay, status = worker.loop, worker.replay, worker.status
    stop_at = worker_stops(worker.stops, cfg.num_workers, index)
    env_step = with_fault(loop.step, lambda: loop.steps, worker_fault(index))
    waiter.ready()
    for k in range(first_stop, len(worker.stops)):
        while loop.steps < stop_at[k]:
            # -------------------------------------------------------------- acting
            env_step(0, replay.add)
            if loop.ended:
                write_episodes(status, loop.stats)
            # -------------------------------------------------------------- learning and syncing
            worker.learn_owed()
            status["env_steps"] = loop.steps
            if loop.steps % 256 == 0:
                waiter.check()
                worker.publish()
                write_figures(status, worker.learner, replay)  # the latest batch, for the main process's curves
        # ------------------------------------------------------------------ stop at the sync point
        worker.before_sync_point()
        wait_at_sync_point(k, worker.stops, status, control, waiter, args.state_pipe, worker.save)
    loop.close()
    status["state"] = DONE


# ============================================================================== the main process: supervise, evaluate
class SharedParts:
    """What every worker shares: the online and target networks, Adam's state when shared, the target's
    epoch and the shared replay; `save`/`restore` are the checkpoint's part of them."""

    def __init__(self, cfg: DQNConfig, online, target, adam, target_epoch: np.ndarray, replay):
        self.cfg, self.online, self.target, self.adam = cfg, online, target, adam
        self.target_epoch, self.replay = target_epoch, replay

    def save(self) -> dict:
        return {"online": self.online.state_dict(), "target": self.target.state_dict(),
                "target_epoch": self.target_epoch.copy(), "adam": self.adam.state_dict() if self.adam else None,
                "replay": self.replay.state_dict() if self.replay is not None and self.cfg.checkpoint_replay else None}

    def restore(self, shared: dict) -> None:
        self.online.load_state_dict(shared["online"])  # copies into the shared storage
        self.target.load_state_dict(shared["target"])
        if self.adam is not None:
            self.adam.load_state_dict(shared["adam"])
        self.target_epoch[:] = shared["target_epoch"]
        if shared["replay"] is not None:
            self.replay.load_state_dict(shared["replay"])


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    preflight(cfg)  # refused settings and shared memory that cannot fit stop the run here
    warn_if_oversubscribed(cfg.num_workers, "worker processes")
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.torch_threads)
    started = time.perf_counter()
    spec, n = env_spec(cfg.env_id), cfg.num_workers
    online = build_q_network(spec.obs_shape, spec.num_actions, cfg.hidden_sizes, cfg.layer_norm,
                             cfg.seed).share_memory()
    target = copy.deepcopy(online).requires_grad_(False).share_memory()
    adam = optimizer_state = None
    if cfg.optimizer_state == "shared":  # created and shared (in place) BEFORE any worker exists
        adam = FusedAdam(list(online.parameters()), lr=cfg.lr, eps=cfg.adam_eps)
        optimizer_state = {key: [t.share_memory_() for t in getattr(adam, key)] for key in ADAM_KEYS}
    run = Run("hogwild", cfg, reporter, online)  # the workers learn: no ReplayLearning here
    with worker_pool("worker", n, cfg.worker_timeout_s) as pool:
        blocks, status, control = pool.blocks, pool.status, pool.control
        blocks.allocate("in_flight", (n, 8), np.int64)
        lock, replay = pool.ctx.Lock(), None
        if cfg.hogwild_replay == "shared":  # one ring for every worker, its lock only for reserving slots
            replay = SharedReplay(**SharedReplay.allocate(blocks, "replay", cfg.buffer_size,
                                                          transition_dtype(spec.obs_shape, spec.obs_dtype)),
                                  lock=pool.ctx.Lock())
        shared = SharedParts(cfg, online, target, adam, blocks.allocate("target_epoch", (8,), np.int64), replay)
        run.attach("shared", shared)
        workers = run.attach("workers", WorkerStates(cfg, status))
        workers.collect = pool.collect  # each worker's own state, from its pipe at a sync point
        if run.resume():  # the workers go on from the sync point after the saved one
            control[Control.RELEASED] = run.next_stop
        worker_states = workers.starting(next_stop=run.next_stop)
        pool.start(_act_and_learn, lambda i: WorkerArgs(cfg, online, target, optimizer_state, lock,
                                                        replay and replay.lock, pool.state_writers[i], worker_states[i]))
        pool.go(max(120.0, cfg.worker_timeout_s))
        startup_seconds = time.perf_counter() - started
        run.start_clock(workers=lambda: status["pid"].tolist())
        run.curves.watch_workers(lambda: status)  # each worker's share of the env steps
        global_steps = _supervise(run, pool, shared)
        final = pool.finish()  # a copy: the blocks go next
        replay_sources = replay.data["source"][:replay.size].copy() if replay else None  # whose rows it holds
        adam_steps = float(optimizer_state["steps"][0]) if optimizer_state is not None else None
    return hogwild_summary(run, final, env_steps=global_steps, startup_seconds=startup_seconds,
                           shared_adam_steps=adam_steps, replay_sources=replay_sources)


def _supervise(run: Run, pool, shared: SharedParts) -> int:
    """The main process while the workers act and learn: health, logs, and each sync point's evaluation
    and save with every worker stopped; the env steps at the end."""
    status, control, cfg, replay = pool.status, pool.control, run.cfg, shared.replay
    logged_loss = float(status["loss_sum"].sum())  # the losses summed up to the previous log
    capacity = replay.capacity if replay is not None else cfg.num_workers * worker_replay_size(cfg)
    while True:
        # Blocks (no CPU) until a worker stops, or for LOG_WAIT_S: the log's cadence, and the
        # health check's; it polled every millisecond before.
        arrived_before = int(status["at_sync_point"].sum())
        pool.main_notifier.wait_until(0, lambda: int(status["at_sync_point"].sum()) != arrived_before, timeout_s=LOG_WAIT_S)
        try:
            pool.check()
        except RunDiverged as err:  # a worker saw it; the run's holdout and clock are here
            raise run.diverged(err.reason, err.update, err.env_steps, err.max_abs_q) from None
        global_steps = int(status["env_steps"].sum())
        # -------------------------------------------------------------- logging / evaluation / checkpoint
        if run.log_due(global_steps):
            updates, loss_total = int(status["updates"].sum()), float(status["loss_sum"].sum())
            run.log(global_steps, status_episodes(status), LearningLog(updates, loss_total - logged_loss),
                    overlap_fraction=float(status["overlaps"].sum()) / max(1, updates),
                    **hogwild_figures(status, capacity, None if replay is None else replay.size))
            logged_loss = loss_total
        if all_at_sync_point(run, status, global_steps):
            if run.at_stop(global_steps):
                return global_steps  # the shared weights were evaluated with the workers stopped
            control[Control.RELEASED] = run.next_stop
            pool.workers_notifier.notify()
