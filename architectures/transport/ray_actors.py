"""The run's Ray actors, and what losing one costs: a worker group over Ray.

RLlib lets Ray restart a lost env runner in place (`max_restarts`) and pushes it the current
weights; here a lost actor is replaced by a new Ray actor, up to `actor_restarts` times a run,
because an in-place restart runs the constructor again with the arguments of the first start
(the replacement could not carry the lost actor's counters and seed stream on) wherever Ray
chooses, the lost node included while Ray still offers its CPUs (docs/ray.md). The replacement starts wherever the cluster has a free CPU while
the learner goes on with the survivors; it fetches the newest weights with its first request
and is asked for its share of the remaining env steps. Past the bound, a loss fails the run in
one line naming the actor and its host. What the losses cost is counted (`costs`): actors lost
and replaced, env steps asked of lost actors and never delivered, and the actor-seconds the
run ran short of an actor.
"""

from __future__ import annotations

import time

import numpy as np

from architectures.transport.ray_support import ActorLost, fetch, kill_all, wait_ready
from architectures.transport.workers import WorkerFailed


class RayActorGroup:
    def __init__(self, ray, actor_class, cfg, tag: str, start_timeout_s: float):
        self.ray, self.cfg, self.tag, self.timeout_s = ray, cfg, tag, start_timeout_s
        self.remote = ray.remote(num_cpus=1, max_restarts=0)(actor_class)
        self.actors: list = []
        self.nodes: list[tuple[int, dict]] = []  # (pid, node) of each slot's current actor
        self.starting: dict[int, tuple] = {}  # slot -> (its replacement's ready reference, since when)
        self.lost = self.replaced = self.undelivered = 0
        self.short_seconds = 0.0
        self.losses: list[dict] = []  # each loss: slot, host, when it was noticed, how long the replacement took
        self.avoid: set[str] = set()  # nodes that lost an actor: a replacement goes elsewhere if it can
        self.vacant: dict[int, dict] = {}  # slot -> its saved stream state, where a resume placed no actor

    def start(self, faults: list, resumes: list, places: int) -> None:
        """An actor for each of the first `places` slots; a resume on a smaller cluster leaves the
        rest vacant (their saved state kept for the next checkpoint), the others making their share."""
        self.vacant = {i: resumes[i]["actor"] for i in range(places, len(resumes))}
        self.actors = [self.remote.options(name=f"{self.tag}_{i}").remote(i, self.cfg, fault, resume)
                       for i, (fault, resume) in enumerate(zip(faults[:places], resumes[:places]))]
        self.nodes = wait_ready(self.ray, self.actors, self.timeout_s) + [(0, None)] * len(self.vacant)
        self.actors += [None] * len(self.vacant)

    # ------------------------------------------------------------------ losing and replacing
    def replace(self, lost: ActorLost, row: np.ndarray, undelivered: int) -> None:
        """Slot `lost.index`'s actor is gone with `undelivered` env steps it was asked for: start
        its replacement from its counters `row`, or fail the run past the bound."""
        from ray.util.scheduling_strategies import NodeLabelSchedulingStrategy, NotIn

        i = lost.index
        _, node = self.nodes[i]
        self.lost += 1
        self.undelivered += undelivered
        where = f"on host {node['hostname']} ({node['address']})"
        entry = {"slot": i, "hostname": node["hostname"], "address": node["address"], "noticed_unix": time.time(),
                 "why": str(lost)[:200], "replaced_after_s": None}
        self.losses.append(entry)
        if self.replaced >= self.cfg.actor_restarts:
            said = (f"{lost} {where}; actor_restarts={self.cfg.actor_restarts} replacements were used"
                    if self.cfg.actor_restarts else f"{lost} {where}")
            failed = WorkerFailed(said, detail=lost.detail)
            raise failed from failed.__cause__  # the actor's traceback as the cause
        self.ray.kill(self.actors[i], no_restart=True)  # a hung or cut-off one must not come back
        self.replaced += 1
        resume = {"actor": None, "row": row.copy(), "incarnation": self.replaced}
        # Ray declares a lost node dead only after its health checks fail (~15 s): until then it
        # offers the dead actors' CPUs there. Prefer other nodes (soft: a one-node cluster still works).
        self.avoid.add(node["node_id"])
        away = NodeLabelSchedulingStrategy(hard={}, soft={"ray.io/node-id": NotIn(*self.avoid)})
        self.actors[i] = self.remote.options(name=f"{self.tag}_{i}_r{self.replaced}",
                                             scheduling_strategy=away).remote(i, self.cfg, None, resume)
        self.starting[i] = (self.actors[i].ready.remote(), time.monotonic(), row.copy(), entry)

    def available(self, i: int) -> bool:
        """Whether slot i has an actor to ask: not while vacant, or while its replacement starts."""
        if i in self.vacant:
            return False
        if i not in self.starting:
            return True
        ref, since = self.starting[i][:2]
        if not self.ray.wait([ref], timeout=0)[0]:
            if time.monotonic() - since > self.timeout_s:
                raise WorkerFailed(f"actor {i}: its replacement did not start within {self.timeout_s:.0f} s; it "
                                   f"needs one free CPU in the cluster (ray status shows them)")
            return False
        self._up(i)
        return True

    def _up(self, i: int) -> None:
        """Slot i's replacement has answered: ready, or lost too (then replaced again, if allowed)."""
        ref, since, row, entry = self.starting.pop(i)
        self.short_seconds += time.monotonic() - since
        try:
            self.nodes[i] = self.ray.get(ref, timeout=self.timeout_s)
            entry["replaced_after_s"] = round(time.monotonic() - since, 3)  # from the loss noticed to ready
        except self.ray.exceptions.RayActorError as err:  # lost while starting: its node went, or it was killed
            self.replace(ActorLost(f"actor {i}'s replacement (Ray actor) was lost while starting: "
                                   f"{type(err).__name__}", i, detail=str(err)), row, 0)
        except self.ray.exceptions.RayError:
            wait_ready(self.ray, [self.actors[i]], self.timeout_s)  # raises the one line that says why

    def starting_refs(self) -> list:
        """What a learner with nothing else to wait for blocks on: replacements coming up."""
        return [starting[0] for starting in self.starting.values()]

    def states(self, rows: np.ndarray) -> list:
        """Every actor's (stream state, counters), for a checkpoint; an actor lost meanwhile is
        replaced first (it was idle: nothing undelivered)."""
        while True:
            while self.starting:  # a replacement of this stop's last batch: up before its state
                i = next(iter(self.starting))
                self.ray.wait([self.starting[i][0]], timeout=self.timeout_s)
                self._up(i)
            try:
                asked = [(i, a.save.remote()) for i, a in enumerate(self.actors) if i not in self.vacant]
                states = {i: fetch(self.ray, ref, i, rows[i]) for i, ref in asked}
                return [states[i] if i in states else self.vacant[i] for i in range(len(self.actors))]
            except ActorLost as lost:
                self.replace(lost, rows[lost.index], 0)

    def costs(self) -> dict:
        return {"actors_lost": self.lost, "actors_replaced": self.replaced,
                "env_steps_undelivered": self.undelivered, "actor_seconds_short": round(self.short_seconds, 3),
                "actor_losses": [dict(loss) for loss in self.losses]}

    def save(self) -> dict:
        """What a checkpoint holds of the group: its losses so far (`costs`)."""
        return self.costs()

    def restore(self, saved: dict) -> None:
        """A resumed run's losses so far, so the bound and the counts span the whole run."""
        self.lost, self.replaced = saved["actors_lost"], saved["actors_replaced"]
        self.undelivered, self.short_seconds = saved["env_steps_undelivered"], saved["actor_seconds_short"]
        self.losses = list(saved.get("actor_losses", []))

    def placed_nodes(self) -> list[dict]:
        return [node for _, node in self.nodes if node is not None]

    def kill(self) -> None:
        kill_all(self.ray, [actor for actor in self.actors if actor is not None])
