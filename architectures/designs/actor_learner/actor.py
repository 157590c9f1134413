"""actor_learner's Actor, written once for every transport: one acting slot's env loop, its copy of the
Q-network and its weights client; the transports drive it (an actor process's own loop over shared
memory, a Ray actor's `collect` of a requested batch).

`step()` is one env step: the newest published weights if any moved (one version peek otherwise),
one policy forward, one env step, the n-step adder; it returns the transitions that completed. Its
counters live in `row` (a STATUS_DTYPE record: the shared status row, or a Ray actor's own), so the
learner reads them as it always has. `save()` / `restore()` are its stream (steps, seeds, RNG,
statistics; a restored actor starts a fresh episode). A slot's stream is its index, or for a Ray
replacement `index + incarnation x num_workers`, which no other actor draws.

Fault injection is a subclass, built only where a test asks for a fault (`make_actor`): the actor a
run normally builds has no fault check on its path.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.envs import rng_seeds, training_episode_seeds
from architectures.core.networks import GreedyPolicy, build_q_network
from architectures.core.replay import Transition
from architectures.run.acting import EnvLoop, actor_epsilon
from architectures.transport.variables import VariableClient
from architectures.transport.workers import inject_fault

ACTOR_ROLES = ("env_step", "act", "n_step", "handoff", "weight_sync", "wait")
"""What an actor's time goes to; `wait` is idle (rate limiter, a full ring)."""


def initial_priority(policy: GreedyPolicy, t: Transition) -> float:
    """Ape-X's initial priority: |n-step TD error| under the actor's local network."""
    bootstrap = float(policy.q_values(t.next_obs).max()) if t.discount > 0 else 0.0
    return abs(t.reward + t.discount * bootstrap - float(policy.q_values(t.obs)[t.action]))


class Actor:
    """One acting slot (see the module docstring). `client(params)` makes the weights client over the
    network's parameter arrays; `run_steps()` is the run's env-step count a free-running actor's epsilon
    follows."""

    def __init__(self, cfg: DQNConfig, index: int, row: np.ndarray, client: Callable[[list], VariableClient],
                 run_steps: Callable[[], int], stream: int | None = None):
        self.cfg, self.index, self.row = cfg, index, row
        self.stream = index if stream is None else stream
        self.loop = EnvLoop(cfg, index, None, actor_epsilon(cfg, index, run_steps))
        space = self.loop.env.observation_space
        net = build_q_network(space.shape, int(self.loop.env.action_space.n), cfg.hidden_sizes, cfg.layer_norm,
                              cfg.seed)
        self.weights = client([p.detach().numpy() for p in net.parameters()])  # the policy acts through these
        acting = rng_seeds(cfg.seed)[0].spawn(max(cfg.num_workers, self.stream + 1))[self.stream]
        self.loop.policy = GreedyPolicy(net, np.random.default_rng(acting))
        self.sync_s = float(row["t_weight_sync"])  # seconds spent taking new weights in (a resumed row's so far)

    @property
    def steps(self) -> int:
        return self.loop.steps

    def step(self) -> list[Transition]:
        """One env step with the newest weights; the transitions it completed."""
        t0 = time.perf_counter()
        if self.weights.update() is not None:
            self.row["weights_version"] = self.weights.version
            self.row["weight_fetches"] += 1
        self.sync_s += time.perf_counter() - t0
        return self.loop.step(self.weights.version)

    def priority(self, transition: Transition) -> float:
        """The transition's initial priority (prioritized replay), else 0."""
        return initial_priority(self.loop.policy, transition) if self.cfg.prioritized else 0.0

    def save(self) -> dict:
        return self.loop.save()

    def restore(self, state: dict) -> None:
        self.loop.restore(state)

    def replacing(self, row: np.ndarray) -> dict:
        """The stream state a replacement for a lost actor starts from: the lost one's counters (`row`)
        on fresh seeds of this actor's stream."""
        loop = self.loop
        loop.seeds = training_episode_seeds(self.cfg.seed, self.stream)
        first = next(loop.seeds)
        return {**loop.save(), "steps": int(row["env_steps"]), "episode_seed": first, "pending": 0,
                "stats": {"episodes": int(row["episodes"]), "length_sum": int(row["episode_length_sum"]),
                          "return_sum": float(row["episode_return_sum"])}}

    def times(self) -> dict[str, float]:
        """The acting part of ACTOR_ROLES so far, in seconds (hand-off and waits are the transport's)."""
        return {"env_step": self.loop.env_s, "act": self.loop.act_s, "n_step": self.loop.fold_s,
                "weight_sync": self.sync_s}

    def close(self) -> None:
        self.loop.close()


class FaultyActor(Actor):
    """An Actor with a fault (kind, env step) injected, for the failure-handling tests: from that env
    step on it crashes, kills itself, hangs, or stops taking new weights (`freeze_weights`)."""

    def __init__(self, *args, fault: tuple[str, int], **kwargs):
        super().__init__(*args, **kwargs)
        self.fault = fault

    def step(self) -> list[Transition]:
        kind, at = self.fault
        if self.loop.steps >= at:
            if kind == "freeze_weights":
                return self.loop.step(self.weights.version)
            inject_fault(kind)
        return super().step()


def make_actor(*args, fault: tuple[str, int] | None = None, **kwargs) -> Actor:
    """An Actor, or a FaultyActor where a fault is asked for."""
    return Actor(*args, **kwargs) if fault is None else FaultyActor(*args, fault=fault, **kwargs)
