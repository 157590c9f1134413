"""actor_learner on Ray (`backend=ray`): the same architecture, with actors spread over a cluster.

Same section order and the same pieces as actor_learner.py (env factory, Q-network, n-step
adder, replay, DQN update, holdout harness, diagnostics); only the transport differs:
- acting happens in `num_workers` Ray actors (one CPU each, placed by Ray on any node). The
  learner is the driver (the main process, the only one that talks to Sacred) and owns the
  replay. It asks each actor for `BATCH_STEPS` env steps at a time, `IN_FLIGHT` requests
  queued per actor so an actor never idles on a round trip;
- hand-off: an actor packs a batch's transitions into one record array and serialises it
  itself (so its cost is measured, not hidden in Ray); the bytes travel in the request's reply
  (Ray moves replies over 100 KB through its object store), and the learner extends the replay
  in one copy. A `ray.put` per batch measured 4x the round trip of an inline reply here;
- syncing: every `weight_sync_period` updates the learner puts its flat parameters in the
  object store with its version; every request carries the newest (version, reference), and an
  actor fetches the weights only when the version moved;
- `utd` holds on the global env-step count: the learner waits when it is ahead, and requests no
  more env steps while it owes more than `utd_slack_steps` worth of updates (the local
  backend's actors wait on the same condition);
- at every holdout checkpoint each actor is asked for exactly its share of the checkpoint's env
  steps and no more, the learner catches up its owed updates and evaluates off the clock;
- failures: an actor that dies (ray.kill, SIGKILL, a lost node) or raises fails the run with a
  message naming it as soon as Ray reports it; one whose request makes no progress for
  `worker_timeout_s` is reported as hung. The actors are killed at the end either way.

    python -m experiments.train with cartpole actor_learner backend=ray seed=1
"""

from __future__ import annotations

import os
import pickle
import secrets
import socket
import time
from collections import deque

import numpy as np
import torch

from architectures.actor_learner import ACTOR_ROLES, _priority, _summary, actor_epsilon, worker_quota
from architectures.config import ConfigError, DQNConfig
from architectures.diagnostics import LearnerLog, PolicyLag
from architectures.dqn import DQNLearner, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator, checkpoint_steps
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay, transition_dtype
from architectures.shared import DONE, RUNNING, STATUS_DTYPE
from architectures.workers import (WorkerFailed, available_cores, check_weights_flow, misbehave,
                                   warn_if_not_checkpointing, warn_if_oversubscribed, worker_fault)

BATCH_STEPS = 128
"""Env steps per request: one object-store hand-off carries this many transitions."""
IN_FLIGHT = 2
"""Requests queued per actor, so it starts the next batch while the learner fetches the last."""
INSTALL_HINT = "pip install -e '.[ray]' (or ./setup.sh)"


def import_ray():
    """Ray, or a one-line ConfigError saying how to install it (it is an optional extra)."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"backend: 'ray' needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def check_ray_address(address: str) -> None:
    """Raise a one-line ConfigError if `address` (host:port or ray://host:port) cannot be reached;
    `auto` and empty (start a local instance) are left to ray.init."""
    if address in ("", "auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"ray_address: expected 'auto', 'HOST:PORT' or 'ray://HOST:PORT' (got {address!r})")
    try:
        socket.create_connection((host, int(port)), timeout=3.0).close()
    except OSError as err:
        raise ConfigError(f"ray_address: no Ray cluster reachable at {address!r}: {err.strerror or err}") from None


def connect(ray, address: str, num_cpus: int) -> bool:
    """Join the cluster at `address`, or start a local instance when empty; returns whether we
    started the connection (and so must shut it down). An already connected process is reused."""
    if ray.is_initialized():
        return False
    check_ray_address(address)
    try:
        if address and address != "local":
            ray.init(address=address, logging_level="WARNING")
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="WARNING")
    except ConnectionError as err:
        raise ConfigError(f"ray_address: no Ray cluster at {address!r}: {str(err).splitlines()[0]}") from None
    return True


# ============================================================================== acting (Ray actor)
class RayActor:
    """One actor: its own env (seeded per worker), a local Q-network, an n-step adder."""

    def __init__(self, index: int, cfg: DQNConfig, fault: tuple[str, int] | None):
        torch.set_num_threads(1)
        self.index, self.cfg, self.fault = index, cfg, fault
        self.env = make_env(cfg.env_id, cfg.env_step_cost_us)
        self.episode_seeds = training_episode_seeds(cfg.seed, index)
        space = self.env.observation_space
        net = build_q_network(space.shape, int(self.env.action_space.n), cfg.hidden_sizes, cfg.layer_norm, cfg.seed)
        self.params = [p.detach().numpy() for p in net.parameters()]  # the policy acts through views of these
        act_root = np.random.SeedSequence(cfg.seed).spawn(2)[0]
        self.policy = GreedyPolicy(net, np.random.default_rng(act_root.spawn(cfg.num_workers)[index]))
        self.adder = NStepAdder(cfg.n_step, cfg.gamma, source=index)
        self.epsilon = actor_epsilon(cfg, index)
        self.record = transition_dtype(tuple(space.shape), np.dtype(space.dtype))
        self.stats = np.zeros((), STATUS_DTYPE)
        self.stats["pid"], self.stats["weights_version"], self.stats["state"] = os.getpid(), -1, RUNNING
        self.obs, _ = self.env.reset(seed=next(self.episode_seeds))
        self.episode_return, self.episode_length = 0.0, 0
        self.idle_since = None

    def ready(self) -> tuple[int, str]:
        return os.getpid(), socket.gethostname()

    def collect(self, steps: int, weights: list, after_checkpoint: bool) -> tuple[bytes, np.ndarray]:
        """Act `steps` env steps; returns (pickled (records, priorities), this actor's counters).
        `weights` is [version, reference] (in a list, so Ray does not fetch it unasked)."""
        import ray

        perf, s, t = time.perf_counter, self.stats, {role: 0.0 for role in ACTOR_ROLES}
        t0 = perf()
        if self.idle_since is not None and not after_checkpoint:  # parked time is evaluation: off the clock
            t["wait"] = t0 - self.idle_since
        # ------------------------------------------------------------------ syncing (pull weights)
        version, ref = weights
        frozen = self.fault and self.fault[0] == "freeze_weights" and s["env_steps"] >= self.fault[1]
        if version != s["weights_version"] and not frozen:
            flat, offset = ray.get(ref), 0
            for p in self.params:
                p.reshape(-1)[:] = flat[offset:offset + p.size]
                offset += p.size
            s["weights_version"] = version
            s["weight_fetches"] += 1
        t["weight_sync"] = perf() - t0
        # ------------------------------------------------------------------ acting
        rows = np.empty(steps + self.cfg.n_step, self.record)  # a batch completes at most steps + n - 1
        priorities = np.zeros(len(rows), np.float32)
        count = 0
        for _ in range(steps):
            if self.fault and s["env_steps"] >= self.fault[1] and self.fault[0] != "freeze_weights":
                misbehave(self.fault[0])
            t1 = perf()
            action = self.policy.act(self.obs, self.epsilon(int(s["env_steps"])))
            t2 = perf()
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            s["env_steps"] += 1
            self.episode_return += float(reward)
            self.episode_length += 1
            t3 = perf()
            transitions = self.adder.step(self.obs, action, reward, next_obs, terminated, truncated,
                                          int(s["weights_version"]))
            t4 = perf()
            for transition in transitions:
                rows[count] = transition
                if self.cfg.prioritized:
                    priorities[count] = _priority(self.policy, transition, self.cfg)
                count += 1
            t5 = perf()
            if terminated or truncated:
                s["episodes"] += 1
                s["episode_length_sum"] += self.episode_length
                s["episode_return_sum"] += self.episode_return
                self.obs, _ = self.env.reset(seed=next(self.episode_seeds))
                self.episode_return, self.episode_length = 0.0, 0
                t["env_step"] += perf() - t5
            else:
                self.obs = next_obs
            t["act"] += t2 - t1
            t["env_step"] += t3 - t2
            t["n_step"] += t4 - t3
            t["handoff"] += t5 - t4
        # ------------------------------------------------------------------ hand-off (one message per batch)
        t6 = perf()
        payload = pickle.dumps((rows[:count], priorities[:count]), protocol=pickle.HIGHEST_PROTOCOL)
        s["transitions"] += count
        t["handoff"] += perf() - t6
        for role, seconds in t.items():
            s[f"t_{role}"] += seconds
        self.idle_since = perf()
        return payload, s.copy()


# ============================================================================== the learner (driver)
def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    ray = import_ray()  # before any work: a missing Ray is a one-line error
    reporter = reporter or NullReporter()
    warn_if_not_checkpointing(cfg, "actor_learner")
    # ------------------------------------------------------------------ setup
    started = time.perf_counter()
    owns_connection = connect(ray, cfg.ray_address, max(available_cores(), cfg.num_workers))
    if not cfg.ray_address:
        warn_if_oversubscribed(cfg.num_workers, "Ray actors plus one learner")
    torch.set_num_threads(cfg.torch_threads)
    probe = make_env(cfg.env_id)
    obs_shape, num_actions, obs_dtype = probe.observation_space.shape, int(probe.action_space.n), probe.observation_space.dtype
    probe.close()
    n = cfg.num_workers
    learner = DQNLearner(build_q_network(obs_shape, num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed), cfg)
    params = [p.detach().numpy() for p in learner.online.parameters()]
    replay = make_replay(cfg, obs_shape, obs_dtype)
    staleness = PolicyLag(seed=cfg.seed + 1)  # learner version at hand-off minus the acting version
    replay_rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(2)[1])
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    slack_updates = int(cfg.utd_slack_steps * ratio.ratio)
    evaluator = HoldoutEvaluator(cfg, learner.online)
    lag, sampled = PolicyLag(seed=cfg.seed), np.zeros(n, dtype=np.int64)
    timers = Timers()
    status = np.zeros(n, STATUS_DTYPE)  # the learner's copy of each actor's counters, as of its last batch
    status["weights_version"] = -1
    received = np.zeros(n, dtype=np.int64)  # transitions fetched from each actor
    stops = [[worker_quota(c, n, i) for i in range(n)] for c in checkpoint_steps(cfg.total_env_steps, cfg.eval_every)]
    tag = f"pdqn_actor_{os.getpid()}_{secrets.token_hex(3)}"
    actors: list = []
    try:
        remote = ray.remote(num_cpus=1, max_restarts=0)(RayActor)
        actors = [remote.options(name=f"{tag}_{i}").remote(i, cfg, worker_fault(i)) for i in range(n)]
        where = _wait_ready(ray, actors, max(120.0, cfg.worker_timeout_s))
        status["pid"] = [pid for pid, _ in where]
        weights = [0, ray.put(_flat(params))]
        startup_seconds = time.perf_counter() - started
        clock = Stopwatch()
        perf = time.perf_counter
        drain_s = request_s = sample_s = diag_s = update_s = publish_s = wait_s = 0.0
        drained = publishes = waits = requests = 0
        log, last_holdout = LearnerLog(reporter, cfg.log_every), None
        last_check = time.monotonic()
        pending = [deque() for _ in range(n)]  # per actor: (reference, steps), oldest first
        busy_since = np.zeros(n)  # when each actor's oldest request could start
        requested = np.zeros(n, dtype=np.int64)  # env steps asked of each actor so far
        after_checkpoint = np.zeros(n, dtype=bool)
        pending_publish = np.full(n, -1, dtype=np.int64)
        pending_since = np.zeros(n, dtype=np.int64)
        checkpoint = global_steps = 0
        while True:
            # -------------------------------------------------------------- hand-off: request and fetch batches
            t0 = perf()
            for i in range(n):  # the rate limiter: no new steps while the learner owes more than the slack
                while (len(pending[i]) < IN_FLIGHT and requested[i] < stops[checkpoint][i]
                       and ratio.target_updates(int(requested.sum())) - learner.version <= slack_updates):
                    steps = int(min(BATCH_STEPS, stops[checkpoint][i] - requested[i]))
                    if not pending[i]:
                        busy_since[i] = time.monotonic()
                    pending[i].append((actors[i].collect.remote(steps, weights, bool(after_checkpoint[i])), steps))
                    requested[i] += steps
                    after_checkpoint[i] = False
                    requests += 1
            t1 = perf()
            request_s += t1 - t0
            heads = [q[0][0] for q in pending if q]
            ready = set(ray.wait(heads, num_returns=len(heads), timeout=0)[0]) if heads else set()
            for i in range(n):
                while pending[i] and pending[i][0][0] in ready:
                    ref, _ = pending[i].popleft()
                    payload, status[i] = _fetch(ray, ref, i, status[i])
                    rows, priorities = pickle.loads(payload)
                    staleness.record(learner.version, rows["version"])
                    if cfg.prioritized:
                        replay.extend(rows, priorities)  # the actors' initial priorities travel with the rows
                    else:
                        replay.extend(rows)
                    received[i] += len(rows)
                    drained += len(rows)
                    busy_since[i] = time.monotonic()
            global_steps = int(status["env_steps"].sum())
            t2 = perf()
            drain_s += t2 - t1
            # -------------------------------------------------------------- learning
            owed = ratio.target_updates(global_steps) - learner.version
            if owed > 0 and replay.size > 0:
                for _ in range(min(owed, 8)):  # then fetch again, so the actors never wait long
                    t3 = perf()
                    batch = replay.sample(cfg.batch_size, replay_rng)
                    t3b = perf()
                    lag.record(learner.version, batch["version"])
                    sampled += np.bincount(batch["source"], minlength=n)
                    t4 = perf()
                    diag_s += t4 - t3b
                    log.loss_sum += learner.update(batch)
                    if cfg.prioritized:
                        replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
                    t5 = perf()
                    sample_s += t3b - t3
                    update_s += t5 - t4
                    # ------------------------------------------------------ syncing (publish weights)
                    if learner.version % cfg.weight_sync_period == 0:
                        weights = [learner.version, ray.put(_flat(params))]
                        publishes += 1
                        fresh = pending_publish < 0
                        pending_publish[fresh] = learner.version
                        pending_since[fresh] = status["env_steps"][fresh]
                        publish_s += perf() - t5
            elif (not any(pending) and (requested == stops[checkpoint]).all()
                  and global_steps == evaluator.checkpoints[checkpoint]):
                # ---------------------------------------------------------- evaluation (actors parked)
                result = evaluator.evaluate_off_clock(global_steps, clock, timers)
                last_holdout = result["return_mean"]
                reporter.holdout(result)
                checkpoint += 1
                after_checkpoint[:] = True
                if checkpoint == len(evaluator.checkpoints):
                    break
            else:  # the learner is ahead of the data: wait for the next batch
                t7 = perf()
                heads = [q[0][0] for q in pending if q]
                if heads:
                    ray.wait(heads, num_returns=1, timeout=0.05)
                wait_s += perf() - t7
                waits += 1
            # -------------------------------------------------------------- health and logging
            if time.monotonic() - last_check > 0.2:
                last_check = time.monotonic()
                _check_hung(status, pending, busy_since, cfg.worker_timeout_s)
                check_weights_flow(status, pending_publish, pending_since, weights[0])
            if log.due(global_steps):
                steps_per_sec = global_steps / clock.elapsed()
                log.write(global_steps, steps_per_sec, learner, lag, int(status["episodes"].sum()),
                          float(status["episode_return_sum"].sum()))
                reporter.scalar("actor_weights_staleness_max",
                                float(learner.version - status["weights_version"].min()), global_steps)
                reporter.progress(global_steps, cfg.total_env_steps, steps_per_sec, last_holdout)

        # ------------------------------------------------------------------ summary
        train_seconds = clock.elapsed()
        status["state"] = DONE
        for name, seconds, calls in (("handoff_drain", drain_s, drained), ("handoff_request", request_s, requests),
                                     ("sample", sample_s, learner.version), ("update", update_s, learner.version),
                                     ("weight_publish", publish_s, publishes), ("diagnostics", diag_s, learner.version),
                                     ("wait", wait_s, waits)):
            timers.add(name, seconds, calls)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        evaluator.close()
        if owns_connection:
            ray.shutdown()
    result = _summary(cfg, learner, replay, evaluator, ratio, timers, status, lag, sampled, drained, publishes,
                      global_steps, train_seconds, startup_seconds, staleness)
    handoff = result["handoff_us_per_transition"]  # the learner's side also pays for its requests
    handoff["learner_request"] = 1e6 * request_s / max(1, drained)
    handoff["total"] += handoff["learner_request"]
    result.update(backend="ray", batch_steps=BATCH_STEPS, worker_transitions=status["transitions"].tolist(),
                  worker_transitions_received=received.tolist(),
                  actor_hosts=[host for _, host in where])
    return result


def _flat(params: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([p.reshape(-1) for p in params])


def _wait_ready(ray, actors: list, timeout_s: float) -> list[tuple[int, str]]:
    try:
        return ray.get([actor.ready.remote() for actor in actors], timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise WorkerFailed(f"actors: not all {len(actors)} Ray actors started within {timeout_s:.0f} s; each needs "
                           f"one free CPU in the cluster (ray status shows them)") from None
    except ray.exceptions.RayError as err:
        raise WorkerFailed(f"actors: a Ray actor failed to start: {err}") from None


def _fetch(ray, ref, index: int, row: np.ndarray):
    """ray.get, with an actor's death or exception turned into a WorkerFailed naming it."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayActorError as err:
        cause = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise WorkerFailed(f"actor {index} (Ray actor, pid {int(row['pid'])}) died after {int(row['env_steps']):,} "
                           f"env steps: {type(err).__name__}: {cause}") from None
    except ray.exceptions.RayTaskError as err:
        raise WorkerFailed(f"actor {index} (Ray actor, pid {int(row['pid'])}) raised:\n{err}") from None
    except ray.exceptions.ObjectLostError as err:
        raise WorkerFailed(f"actor {index} (Ray actor, pid {int(row['pid'])}): its batch was lost ({err})") from None


def _check_hung(status: np.ndarray, pending: list, busy_since: np.ndarray, timeout_s: float) -> None:
    now = time.monotonic()
    for i, queue in enumerate(pending):
        if queue and now - busy_since[i] > timeout_s:
            raise WorkerFailed(f"actor {i} (Ray actor, pid {int(status[i]['pid'])}) returned no batch for "
                               f"{timeout_s:.0f} s at {int(status[i]['env_steps']):,} env steps: hung "
                               f"(worker_timeout_s)")
