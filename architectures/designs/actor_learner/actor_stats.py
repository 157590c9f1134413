"""actor_learner's actor stats, on either backend: what its learner keeps of its actors.

Their counters (one status row per actor), the acting weights' staleness at hand-off, the weight
publications that the watchdog checks, the hand-off tally, and the
run's result with the bottleneck role named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.diagnostics import PolicyLag, name_bottleneck
from architectures.designs.actor_learner.actor import ACTOR_ROLES
from architectures.run.base import Restored, Run
from architectures.run.parts import streams_restored
from architectures.run.worker_rows import per_worker_summary, restore_status, status_episodes
from architectures.transport.workers import check_weights_flow

@dataclass
class HandoffTally:
    """The learner's side of the hand-off: transitions moved into the replay and the time it took,
    its idle waits for data, and (Ray) the requests it made."""

    transitions: int = 0
    seconds: float = 0.0
    waits: int = 0
    wait_seconds: float = 0.0
    requests: int = 0
    request_seconds: float = 0.0


class Publications:
    """The learner's weight publications, and which actors have yet to pick one up: the state of
    the watchdog that fails a run whose actor stops receiving weights (workers.check_weights_flow)."""

    def __init__(self, status: np.ndarray):
        self.status = status
        self.count, self.seconds = 0, 0.0
        self.pending = np.full(len(status), -1, dtype=np.int64)  # per actor: version not yet picked up
        self.since = np.zeros(len(status), dtype=np.int64)  # ... and that actor's env steps when published

    def published(self, version: int, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        fresh = self.pending < 0
        self.pending[fresh] = version
        self.since[fresh] = self.status["env_steps"][fresh]

    def check(self, latest: int) -> None:
        check_weights_flow(self.status, self.pending, self.since, latest)

    def save(self) -> dict:
        return {"count": self.count, "seconds": self.seconds}

    def restore(self, state: dict) -> None:
        self.count, self.seconds = state["count"], state["seconds"]


class ActorStats:
    """What the learner of an actor_learner run keeps of its actors, on either backend: their
    counters (`status`, one row per actor), the acting weights' staleness at hand-off, the weight
    publications and the hand-off tally. `save` is what a checkpoint holds of them, `restore`
    puts it back, `result` is the run's result."""

    def __init__(self, cfg: DQNConfig, status: np.ndarray):
        self.cfg, self.status = cfg, status
        self.staleness = PolicyLag(seed=cfg.seed + 1)  # learner version at hand-off minus the acting version
        self.worker_staleness = np.zeros((len(status), 2))  # per actor: summed staleness, transitions
        self.publications = Publications(status)
        self.tally = HandoffTally()
        self.collect: Callable[[], list[dict]] | None = None  # the actors' stream states, at a sync point
        self.resumed_actors: list[dict] | None = None  # ... as a resume found them, with their saved rows
        self.resumed_status: np.ndarray | None = None

    def store(self, rows: np.ndarray, priorities: np.ndarray, learner_version: int, replay) -> None:
        """Hand-off into the replay: record how stale the rows' acting weights were, then store them."""
        self.staleness.record(learner_version, rows["version"])
        n = len(self.status)
        self.worker_staleness[:, 0] += np.bincount(rows["source"], weights=learner_version - rows["version"],
                                                   minlength=n)[:n]
        self.worker_staleness[:, 1] += np.bincount(rows["source"], minlength=n)[:n]
        if self.cfg.prioritized:
            replay.extend(rows, priorities)  # the actors' initial priorities travel with the rows
        else:
            replay.extend(rows)

    def watch(self, run: Run) -> None:
        """Give the run's curves the actors' rows (their shares and epsilons), the acting weights'
        age at hand-off, and the learner's and actors' busy time (`roles`)."""
        run.curves.watch_workers(lambda: self.status, run_steps=self.cfg.actor_quotas == "free")
        run.curves.watch_handoff(self.staleness)
        run.curves.watch_roles(lambda: self.roles(run.learning))

    def roles(self, learning) -> dict[str, dict[str, float]]:
        """The learner's seconds so far per component and an actor's (the mean over actors): what
        `result` names the bottleneck from, read while the run trains."""
        tally = self.tally
        learner = {"handoff_drain": tally.seconds, "handoff_request": tally.request_seconds,
                   "weight_publish": self.publications.seconds, "sample": learning.sample_s,
                   "update": learning.update_s, "wait": tally.wait_seconds}
        return {"learner": learner, "actors": {role: float(self.status[f"t_{role}"].mean()) for role in ACTOR_ROLES}}

    def save(self) -> dict:
        """The actors' stream states (collected from wherever they act: `collect`, set by the transport)
        with what the learner keeps of them."""
        return {"actors": self.collect(), "status": self.status.copy(), "staleness": self.staleness.state_dict(),
                "worker_staleness": self.worker_staleness.copy(), "publications": self.publications.save(),
                "tally": vars(self.tally).copy()}

    def restore(self, saved: dict) -> Restored:
        """Put the saved stats back and keep each actor's saved stream state (`resumed_actors`), for the
        transport to hand back to its actor as it starts."""
        restore_status(self.status, saved["status"])
        self.staleness.load_state_dict(saved["staleness"])
        self.worker_staleness[:] = saved["worker_staleness"]
        self.publications.restore(saved["publications"])
        self.tally = HandoffTally(**saved["tally"])
        self.resumed_actors, self.resumed_status = saved["actors"], saved["status"]
        return streams_restored(self.cfg, saved["actors"])

    def result(self, run: Run, *, env_steps: int, startup_seconds: float) -> dict:
        """The run's result: the learner's numbers and each actor's, the hand-off cost per
        transition, and the bottleneck role."""
        status = self.status
        n = len(status)
        tally, publications = self.tally, self.publications
        components = {"handoff_drain": (tally.seconds, tally.transitions),
                      "weight_publish": (publications.seconds, publications.count),
                      "wait": (tally.wait_seconds, tally.waits)}
        if tally.requests:  # Ray: the learner's requests for batches
            components["handoff_request"] = (tally.request_seconds, tally.requests)
        actor_seconds = {role: float(status[f"t_{role}"].mean()) for role in ACTOR_ROLES}
        learning = run.learning
        result = run.result(
            env_steps=env_steps, episodes=status_episodes(status), components=components,
            num_workers=n, startup_seconds=startup_seconds, weight_publishes=publications.count,
            worker_weights_versions=status["weights_version"].tolist(),
            worker_weight_fetches=status["weight_fetches"].tolist(),
            policy_lag=learning.lag.summary(),
            # How stale the acting weights were when a transition reached the learner (no replay age).
            acting_staleness=self.staleness.summary(),
            # ... and per actor: does a slow actor hand off staler transitions?
            worker_acting_staleness_mean=(self.worker_staleness[:, 0] / np.maximum(1, self.worker_staleness[:, 1])
                                          ).tolist(),
            actor_quotas=self.cfg.actor_quotas,
            **per_worker_summary(status, learning.replay.data["source"][:learning.replay.size], learning.sampled_counts),
            actor_time_breakdown={role: {"seconds_per_actor": s, "us_per_env_step": 1e6 * s * n / max(1, env_steps)}
                                  for role, s in actor_seconds.items()},
        )
        breakdown = result["time_breakdown"]
        handoff_write = 1e6 * float(status["t_handoff"].sum()) / max(1, tally.transitions)
        handoff_drain = breakdown["handoff_drain"]["us_per_call"]
        handoff = {"actor_write": handoff_write, "learner_drain": handoff_drain}
        if tally.requests:
            handoff["learner_request"] = 1e6 * tally.request_seconds / max(1, tally.transitions)
        result["handoff_us_per_transition"] = {**handoff, "total": sum(handoff.values())}
        learner_parts = {name: row["seconds"] for name, row in breakdown.items() if name not in ("eval", "checkpoint")}
        result["bottleneck"] = name_bottleneck(result["train_seconds"],
                                               {"learner": learner_parts, "actors": actor_seconds}, result.get("cpu"))
        for role in ("env_step", "act", "n_step", "handoff", "weight_sync"):
            result["component_costs_us"][f"actor_{role}"] = result["actor_time_breakdown"][role]["us_per_env_step"] / n
        return result
