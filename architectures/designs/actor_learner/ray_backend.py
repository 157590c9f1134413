"""actor_learner on Ray (`backend=ray`): the same design, with actors spread over a cluster.

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
  in one copy, since a `ray.put` per batch cost more than an inline reply
  (docs/design-notes.md#ray_backend);
- syncing: every `weight_sync_period` updates the learner puts its flat parameters in the
  object store with its version; every request carries the newest (version, reference), and an
  actor fetches the weights only when the version moved;
- `utd` holds on the global env-step count: the learner waits when it is ahead, and requests no
  more env steps while it owes more than `utd_slack_steps` worth of updates;
- at every sync point (`loop.stops`) each actor is asked for exactly its share of the env
  steps and no more, the learner catches up, then evaluates and/or saves: a save asks every
  (idle) actor for its stream state; resumed actors start fresh episodes;
- failures: an actor that is lost (ray.kill, SIGKILL, a lost node) or whose request makes no
  progress for `worker_timeout_s` (hung, or cut off) is replaced, up to `actor_restarts` times
  a run (transport/ray_actors.py); the learner goes on with the others meanwhile, and the
  replacement is asked again for the env steps the lost one never delivered. Past the bound
  (0 by default) the run fails with one line naming the actor and its host, as soon as Ray
  reports the loss. An actor that raises fails the run at once (a replacement would raise
  again). The actors are killed at the end either way.

    python -m experiments.train with cartpole actor_learner backend=ray seed=1
"""

from __future__ import annotations

import os
import pickle
import secrets
import time
import warnings
from collections import deque

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import build_learner
from architectures.core.envs import env_spec
from architectures.core.errors import RunWarning
from architectures.core.limits import available_cores
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.replay import make_replay
from architectures.designs.actor_learner.actor_stats import ActorStats
from architectures.designs.actor_learner.runner import Throttle, learn
from architectures.designs.actor_learner.ray_actor import RayActor
from architectures.run.base import Run
from architectures.run.parts import ArrayPart
from architectures.run.learning import ReplayLearning
from architectures.run.sync_points import room
from architectures.transport.ray_actors import RayActorGroup
from architectures.transport.ray_support import ActorLost, check_hung, check_ray_joinable, connect, fetch, import_ray
from architectures.transport.variables import FlatLayout, RaySource
from architectures.transport.shared import DONE, STATUS_DTYPE
from architectures.transport.workers import WorkerFailed, warn_if_oversubscribed, worker_fault



# ============================================================================== the learner (driver)
def preflight(cfg: DQNConfig) -> None:
    """Ray installed and the cluster at `ray_address` reachable and willing to take this driver
    (its token), before anything is recorded: a refusal (exit 2), never a failed run."""
    import_ray()
    check_ray_joinable(cfg.ray_address)


def resume_places(ray, cfg: DQNConfig, n: int) -> int:
    """How many of the n actors a resume can place: all where the cluster has a free CPU for
    each, else as many as it has (a resume on a smaller cluster), said once and recorded."""
    free = int(ray.available_resources().get("CPU", 0))
    if free >= n or not cfg.ray_address:  # a private instance is made with a CPU per actor
        return n
    if free < 1:
        raise WorkerFailed(f"actors: the cluster at {cfg.ray_address!r} has no free CPU for any of the {n} actors")
    warnings.warn(f"the cluster has {free} free CPUs for {n} actors: resuming with {free}, the vacant actors' "
                  f"remaining env steps re-divided among them (actors_placed={free})", RunWarning, stacklevel=2)
    return free


class RayTransport:
    """actor_learner's data over Ray (runner.Transport): the learner asks each actor for batches of
    `ray_batch_steps` env steps within its share of the next sync point and the rate limiter's slack,
    `ray_requests_in_flight` at a time, and hands each reply to the replay; an actor lost or hung is
    replaced and asked again for what it never delivered (RayActorGroup)."""

    def __init__(self, ray, run: Run, learning: ReplayLearning, group: RayActorGroup, weights: RaySource,
                 actor_stats: ActorStats, received: np.ndarray, places: int):
        self.ray, self.run, self.learning, self.group, self.weights = ray, run, learning, group, weights
        self.actor_stats, self.status, self.received, self.places = actor_stats, actor_stats.status, received, places
        cfg, n = run.cfg, len(self.status)
        self.cfg, self.n = cfg, n
        self.pending = [deque() for _ in range(n)]  # per actor: (reference, steps), oldest first
        self.busy_since = np.zeros(n)  # when each actor's oldest request could start
        self.requested = self.status["env_steps"].astype(np.int64)  # env steps asked of each actor so far
        self.after_stop = np.zeros(n, dtype=bool)
        self.due_check = Throttle()

    def room(self, i: int, k: int) -> int:
        """Env steps actor i may still be asked for before sync point k (a resume on a smaller cluster
        re-divides the vacant actors' shares: whoever asks first)."""
        free = self.cfg.actor_quotas == "free" or self.places < self.n
        return room(self.run.stops, self.n, i, k, int(self.requested[i]), int(self.requested.sum()), free)

    def exchange(self) -> int:
        self.request()
        began = time.perf_counter()
        heads = [q[0][0] for q in self.pending if q]
        ready = set(self.ray.wait(heads, num_returns=len(heads), timeout=0)[0]) if heads else set()
        for i in range(self.n):
            while self.pending[i] and self.pending[i][0][0] in ready:
                if not self.take(i):
                    break
        self.actor_stats.tally.seconds += time.perf_counter() - began
        return int(self.status["env_steps"].sum())

    def request(self) -> None:
        """Ask every actor for batches: no new steps while the learner owes more than the slack."""
        began, k, limiter, version = time.perf_counter(), self.run.next_stop, self.learning.limiter, self.learning.updates
        for i in range(self.n):
            while (len(self.pending[i]) < self.cfg.ray_requests_in_flight and self.room(i, k) > 0
                   and self.group.available(i) and limiter.can_insert(int(self.requested.sum()), version)):
                steps = int(min(self.cfg.ray_batch_steps, self.room(i, k)))
                if not self.pending[i]:
                    self.busy_since[i] = time.monotonic()
                self.pending[i].append((self.group.actors[i].collect.remote(
                    steps, self.weights.current(), bool(self.after_stop[i]), int(self.requested.sum())), steps))
                self.requested[i] += steps
                self.after_stop[i] = False
                self.actor_stats.tally.requests += 1
        self.actor_stats.tally.request_seconds += time.perf_counter() - began

    def take(self, i: int) -> bool:
        """Actor i's oldest reply into the replay; False where the actor was lost (then replaced)."""
        ref, steps = self.pending[i].popleft()
        try:
            payload, self.status[i] = fetch(self.ray, ref, i, self.status[i])
        except ActorLost as lost:  # its replacement is asked again for what it never delivered
            self.replace(lost, steps)
            return False
        rows, priorities = pickle.loads(payload)
        self.actor_stats.store(rows, priorities, self.learning.learner.version, self.learning.replay)
        self.received[i] += len(rows)
        self.actor_stats.tally.transitions += len(rows)
        self.busy_since[i] = time.monotonic()
        return True

    def replace(self, lost: ActorLost, steps: int = 0) -> None:
        """Replace a lost actor; `steps` of a failed request and its queued ones are asked of the replacement."""
        undelivered = steps + sum(s for _, s in self.pending[lost.index])
        self.pending[lost.index].clear()
        self.requested[lost.index] -= undelivered
        self.group.replace(lost, self.status[lost.index], undelivered)

    def at_sync_point(self, env_steps: int) -> bool:
        return (not any(self.pending) and int(self.requested.sum()) == env_steps
                == self.run.stops[self.run.next_stop].env_steps)

    def release(self) -> None:
        self.after_stop[:] = True

    def wait(self) -> float:
        """Wait for the next batch (or a replacement's start)."""
        began = time.perf_counter()
        heads = [q[0][0] for q in self.pending if q] + self.group.starting_refs()
        if heads:
            self.ray.wait(heads, num_returns=1, timeout=0.05)
        return time.perf_counter() - began

    def health(self) -> None:
        """Every 0.2 s: a hung or cut-off actor is as good as lost; a weight-starved one fails the run."""
        if not self.due_check():
            return
        try:
            check_hung(self.status, self.pending, self.busy_since, self.cfg.worker_timeout_s)
        except ActorLost as lost:
            self.replace(lost)
        self.actor_stats.publications.check(self.weights.latest_version())


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
    actor_stats = ActorStats(cfg, status)  # staleness at hand-off, publications, hand-off tally
    weights = RaySource(ray, FlatLayout([tuple(p.shape) for p in learner.online.parameters()]))
    run = Run("actor_learner", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, sources=n, weights=weights,
                              published=actor_stats.publications.published)
    group = RayActorGroup(ray, RayActor, cfg, f"pdqn_actor_{os.getpid()}_{secrets.token_hex(3)}",
                          max(120.0, cfg.worker_timeout_s))  # the actors, and what losing one costs
    run.attach("actors", actor_stats)
    actor_stats.collect = lambda: group.states(status)  # each actor's (stream state, counters), asked of it
    run.attach("received", ArrayPart(received))
    run.attach("losses", group)  # actors lost and replaced so far, so the bound spans the whole run
    resumed = run.resume()
    resume = [None] * n
    if resumed:  # actors continue their streams from the saved counters
        resume = [{"actor": state, "row": actor_stats.resumed_status[i]}
                  for i, state in enumerate(actor_stats.resumed_actors)]
    places = n if not resumed else resume_places(ray, cfg, n)
    try:
        group.start([worker_fault(i) for i in range(n)], resume, places)
        status["pid"] = [pid for pid, _ in group.nodes]
        learning.publisher.now(learner.version)  # the actors' first weights
        transport = RayTransport(ray, run, learning, group, weights, actor_stats, received, places)
        startup_seconds = time.perf_counter() - started
        run.start_clock()
        actor_stats.watch(run)  # the actors' shares and epsilons, acting weights' age, busy roles: live curves
        env_steps = learn(run, learning, transport, actor_stats)
        status["state"] = DONE
    finally:
        group.kill()
        if owns_connection:
            ray.shutdown()
    result = actor_stats.result(run, env_steps=env_steps, startup_seconds=startup_seconds)
    result.update(backend="ray", batch_steps=cfg.ray_batch_steps, worker_transitions=status["transitions"].tolist(),
                  worker_transitions_received=received.tolist(),
                  actor_hosts=[node["hostname"] for node in group.placed_nodes()], actor_nodes=group.placed_nodes(),
                  actors_placed=places, **group.costs())
    return result
