"""actor_learner on Ray (`backend=ray`): the same architecture, with actors spread over a cluster.

Same section order and the same pieces as actor_learner.py (env loop, Q-network, replay, DQN
update, holdout harness, run bookkeeping, diagnostics); only the transport differs:
- acting happens in `num_workers` Ray actors (one CPU each, placed by Ray on any node). The
  learner is the driver (the main process, the only one that talks to Sacred) and owns the
  replay. It asks each actor for `ray_batch_steps` env steps at a time, `ray_requests_in_flight`
  requests queued per actor so an actor never idles on a round trip (more of either hides a
  longer round trip between hosts, at the price of older acting weights);
- hand-off: an actor packs a batch's transitions into one record array and serialises it
  itself (so its cost is measured, not hidden in Ray); the bytes travel in the request's reply
  (Ray moves replies over 100 KB through its object store), and the learner extends the replay
  in one copy. A `ray.put` per batch measured 4x the round trip of an inline reply here;
- syncing: every `weight_sync_period` updates the learner puts its flat parameters in the
  object store with its version; every request carries the newest (version, reference), and an
  actor fetches the weights only when the version moved;
- `utd` holds on the global env-step count: the learner waits when it is ahead, and requests no
  more env steps while it owes more than `utd_slack_steps` worth of updates;
- at every parking point (`loop.stops`) each actor is asked for exactly its share of the env
  steps and no more, the learner catches up, then evaluates and/or saves: a save asks every
  (idle) actor for its stream state; resumed actors start fresh episodes;
- failures: an actor that dies (ray.kill, SIGKILL, a lost node) or raises fails the run with a
  message naming it as soon as Ray reports it; one whose request makes no progress for
  `worker_timeout_s` is reported as hung. The actors are killed at the end either way.

    python -m experiments.train with cartpole actor_learner backend=ray seed=1
"""

from __future__ import annotations

import os
import pickle
import secrets
import time
from collections import deque

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import build_learner
from architectures.core.env_guard import name_this_process
from architectures.core.envs import env_spec, rng_seeds
from architectures.core.errors import RunError
from architectures.core.limits import available_cores
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy, build_q_network
from architectures.core.replay import make_replay, transition_dtype
from architectures.designs.actor_learner.books import ACTOR_ROLES, ActorBooks, initial_priority
from architectures.run.acting import EnvLoop, actor_epsilon
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.parking import worker_stops
from architectures.run.worker_rows import status_episodes, write_episodes
from architectures.transport.ray_support import (check_hung, check_ray_address, connect, fetch, flat, import_ray, kill_all,
                                                 this_node, wait_ready)
from architectures.transport.shared import DONE, RUNNING, STATUS_DTYPE
from architectures.transport.workers import misbehave, warn_if_oversubscribed, worker_fault



# ============================================================================== acting (Ray actor)
class RayActor:
    """One actor: its own env loop (seeded per worker), a local Q-network, its counters."""

    def __init__(self, index: int, cfg: DQNConfig, fault: tuple[str, int] | None, resume: dict | None):
        name_this_process(f"actor {index}, Ray actor, pid {os.getpid()}")  # as its env's errors name it
        self.failed: RunError | None = None
        try:
            self._start(index, cfg, fault, resume)
        except RunError as err:  # e.g. its env raised in reset: said by ready(), one line, not Ray's death
            self.failed = err

    def _start(self, index: int, cfg: DQNConfig, fault: tuple[str, int] | None, resume: dict | None) -> None:
        torch.set_num_threads(1)
        self.index, self.cfg, self.fault = index, cfg, fault
        self.run_steps = 0  # the run's env steps requested so far (free-running actors' epsilon)
        self.loop = EnvLoop(cfg, index, None, actor_epsilon(cfg, index, lambda: self.run_steps))
        space = self.loop.env.observation_space
        net = build_q_network(space.shape, int(self.loop.env.action_space.n), cfg.hidden_sizes, cfg.layer_norm,
                              cfg.seed)
        self.params = [p.detach().numpy() for p in net.parameters()]  # the policy acts through views of these
        self.loop.policy = GreedyPolicy(net, np.random.default_rng(rng_seeds(cfg.seed)[0].spawn(cfg.num_workers)[index]))
        self.record = transition_dtype(tuple(space.shape), np.dtype(space.dtype))
        self.stats = np.zeros((), STATUS_DTYPE)
        if resume is not None:  # a fresh episode; its stream, counters and clocks as saved
            self.loop.restore(resume["actor"])
            self.stats[()] = resume["row"]
        self.stats["pid"], self.stats["weights_version"], self.stats["state"] = os.getpid(), -1, RUNNING
        self.idle_since = None

    def ready(self) -> tuple[int, dict]:
        if self.failed is not None:
            raise self.failed
        return os.getpid(), this_node()

    def state(self) -> dict:
        return self.loop.state()

    def collect(self, steps: int, weights: list, after_checkpoint: bool, run_steps: int) -> tuple[bytes, np.ndarray]:
        """Act `steps` env steps; returns (pickled (records, priorities), this actor's counters).
        `weights` is [version, reference] (in a list, so Ray does not fetch it unasked)."""
        import ray

        self.run_steps = run_steps
        perf, s, loop, t = time.perf_counter, self.stats, self.loop, dict.fromkeys(ACTOR_ROLES, 0.0)
        before = {"act": loop.act_s, "env_step": loop.env_s, "n_step": loop.fold_s}
        t0 = perf()
        if self.idle_since is not None and not after_checkpoint:  # parked time is evaluation: off the clock
            t["wait"] = t0 - self.idle_since
        # ------------------------------------------------------------------ syncing (pull weights)
        version, ref = weights
        frozen = self.fault and self.fault[0] == "freeze_weights" and loop.steps >= self.fault[1]
        if version != s["weights_version"] and not frozen:
            flat_weights, offset = ray.get(ref), 0
            for p in self.params:
                p.reshape(-1)[:] = flat_weights[offset:offset + p.size]
                offset += p.size
            s["weights_version"] = version
            s["weight_fetches"] += 1
        t["weight_sync"] = perf() - t0
        # ------------------------------------------------------------------ acting
        rows = np.empty(steps + self.cfg.n_step, self.record)  # a batch completes at most steps + n - 1
        priorities = np.zeros(len(rows), np.float32)
        count = 0
        for _ in range(steps):
            if self.fault and loop.steps >= self.fault[1] and self.fault[0] != "freeze_weights":
                misbehave(self.fault[0])
            transitions = loop.step(int(s["weights_version"]))
            t4 = perf()
            for transition in transitions:
                rows[count] = transition
                if self.cfg.prioritized:
                    priorities[count] = initial_priority(loop.policy, transition)
                count += 1
            t["handoff"] += perf() - t4
        # ------------------------------------------------------------------ hand-off (one message per batch)
        t6 = perf()
        payload = pickle.dumps((rows[:count], priorities[:count]), protocol=pickle.HIGHEST_PROTOCOL)
        s["transitions"] += count
        s["env_steps"] = loop.steps
        write_episodes(s, loop.stats)
        t["handoff"] += perf() - t6
        t.update(act=loop.act_s - before["act"], env_step=loop.env_s - before["env_step"],
                 n_step=loop.fold_s - before["n_step"])
        for role, seconds in t.items():
            s[f"t_{role}"] += seconds
        self.idle_since = perf()
        return payload, s.copy()


# ============================================================================== the learner (driver)
def preflight(cfg: DQNConfig) -> None:
    """Ray installed and the cluster at `ray_address` reachable, before anything is recorded: a
    refusal (exit 2), never a failed run."""
    import_ray()
    check_ray_address(cfg.ray_address)


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    ray = import_ray()  # before any work: a missing Ray is a one-line error
    reporter = reporter or NullReporter()
    # ------------------------------------------------------------------ setup
    started = time.perf_counter()
    owns_connection = connect(ray, cfg.ray_address, max(available_cores(), cfg.num_workers))
    if not cfg.ray_address:
        warn_if_oversubscribed(cfg.num_workers, "Ray actors plus one learner")
    torch.set_num_threads(cfg.learner_thread_count)
    spec, n = env_spec(cfg.env_id), cfg.num_workers
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    status = np.zeros(n, STATUS_DTYPE)  # the learner's copy of each actor's counters, as of its last batch
    status["weights_version"] = -1
    received = np.zeros(n, dtype=np.int64)  # transitions fetched from each actor
    books, weights = ActorBooks(cfg, status), [0, None]  # staleness at hand-off, publications, hand-off tally

    def publish() -> None:  # after every update: weights into the object store on their period
        if learner.version % cfg.weight_sync_period == 0:  # `learning` refreshed a CUDA learner's host copy
            began = time.perf_counter()
            weights[:] = [learner.version, ray.put(flat(learning.acting.arrays))]
            books.publications.published(learner.version, time.perf_counter() - began)

    run = Run("actor_learner", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, sources=n, after_update=publish)
    resumed = run.resume()
    resume = [None] * n
    if resumed is not None:  # actors continue their streams from the saved counters
        saved = resumed.extras
        resume = [{"actor": state, "row": saved["status"][i]} for i, state in enumerate(books.restore(saved, run))]
        received[:] = saved["received"]
    quotas = [worker_stops(run.stops, n, i) for i in range(n)]  # per actor, per parking point (equal)

    def room(i: int, k: int) -> int:  # env steps actor i may still be asked for before parking point k
        if cfg.actor_quotas == "free":  # whoever asks first: fast actors get more requests
            return run.stops[k].env_steps - int(requested.sum())
        return quotas[i][k] - int(requested[i])

    tag = f"pdqn_actor_{os.getpid()}_{secrets.token_hex(3)}"
    actors: list = []
    try:
        remote = ray.remote(num_cpus=1, max_restarts=0)(RayActor)
        actors = [remote.options(name=f"{tag}_{i}").remote(i, cfg, worker_fault(i), resume[i]) for i in range(n)]
        where = wait_ready(ray, actors, max(120.0, cfg.worker_timeout_s))
        status["pid"] = [pid for pid, _ in where]
        weights[:] = [learner.version, ray.put(flat(learning.acting.arrays))]
        startup_seconds = time.perf_counter() - started
        perf = time.perf_counter
        last_check = time.monotonic()
        pending = [deque() for _ in range(n)]  # per actor: (reference, steps), oldest first
        busy_since = np.zeros(n)  # when each actor's oldest request could start
        requested = status["env_steps"].astype(np.int64)  # env steps asked of each actor so far
        after_stop = np.zeros(n, dtype=bool)
        global_steps = int(status["env_steps"].sum())
        run.start_clock()
        books.watch(run)  # the actors' shares and epsilons, acting weights' age, busy roles: live curves
        while True:
            # -------------------------------------------------------------- hand-off: request and fetch batches
            t0 = perf()
            k = run.next_stop
            for i in range(n):  # the rate limiter: no new steps while the learner owes more than the slack
                while (len(pending[i]) < cfg.ray_requests_in_flight and room(i, k) > 0
                       and learning.limiter.can_insert(int(requested.sum()), learner.version)):
                    steps = int(min(cfg.ray_batch_steps, room(i, k)))
                    if not pending[i]:
                        busy_since[i] = time.monotonic()
                    pending[i].append((actors[i].collect.remote(steps, list(weights), bool(after_stop[i]),
                                                                int(requested.sum())), steps))
                    requested[i] += steps
                    after_stop[i] = False
                    books.tally.requests += 1
            t1 = perf()
            books.tally.request_seconds += t1 - t0
            heads = [q[0][0] for q in pending if q]
            ready = set(ray.wait(heads, num_returns=len(heads), timeout=0)[0]) if heads else set()
            for i in range(n):
                while pending[i] and pending[i][0][0] in ready:
                    ref, _ = pending[i].popleft()
                    payload, status[i] = fetch(ray, ref, i, status[i])
                    rows, priorities = pickle.loads(payload)
                    books.store(rows, priorities, learner.version, replay)
                    received[i] += len(rows)
                    books.tally.transitions += len(rows)
                    busy_since[i] = time.monotonic()
            global_steps = int(status["env_steps"].sum())
            books.tally.seconds += perf() - t1
            # -------------------------------------------------------------- learning
            if learning.owed(global_steps) > 0 and replay.size > 0:
                learning.learn_owed(global_steps, limit=8)  # then fetch again, so the actors never wait long
            elif (not any(pending) and int(requested.sum()) == global_steps == run.stops[k].env_steps):
                # ---------------------------------------------------------- evaluation / checkpoint (actors idle)
                if run.at_stop(global_steps, lambda: {**books.parts(
                        [fetch(ray, ref, i, status[i]) for i, ref in enumerate([a.state.remote() for a in actors])]),
                                                         "received": received.copy()}):
                    break
                after_stop[:] = True
            else:  # the learner is ahead of the data: wait for the next batch
                t7 = perf()
                heads = [q[0][0] for q in pending if q]
                if heads:
                    ray.wait(heads, num_returns=1, timeout=0.05)
                books.tally.wait_seconds += perf() - t7
                books.tally.waits += 1
            # -------------------------------------------------------------- health and logging
            if time.monotonic() - last_check > 0.2:
                last_check = time.monotonic()
                check_hung(status, pending, busy_since, cfg.worker_timeout_s)
                books.publications.check(weights[0])
            if run.log_due(global_steps):
                run.log(global_steps, status_episodes(status),
                           actor_weights_staleness_max=float(learner.version - status["weights_version"].min()))
        status["state"] = DONE
    finally:
        kill_all(ray, actors)
        if owns_connection:
            ray.shutdown()
    result = books.result(run, env_steps=global_steps, startup_seconds=startup_seconds)
    result.update(backend="ray", batch_steps=cfg.ray_batch_steps, worker_transitions=status["transitions"].tolist(),
                  worker_transitions_received=received.tolist(), actor_hosts=[node["hostname"] for _, node in where],
                  actor_nodes=[node for _, node in where])
    return result
