"""The one typed config shared by every design.

Every field has a docstring (read by `describe()` and the README table) and is validated on
construction, so bad input fails in milliseconds with a one-line message naming the key and
its valid range, before any env, network or worker exists.

Units: `total_env_steps`, `learning_starts`, `eps_decay_steps`, `eval_every`, `log_every`
count env steps (summed over all workers); `target_update_period` counts learner updates
(Acme's convention); `utd` is learner updates per env step.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, fields
from typing import Any, Literal

from architectures.core.config_checks import UPPER_BOUNDS, literals, validate
from architectures.core.errors import ConfigError

__all__ = ["ConfigError", "DQNConfig", "UPPER_BOUNDS", "choices", "coerce", "describe", "field_types"]


@dataclass(frozen=True)
class DQNConfig:
    """Every key a design reads, flat (Sacred's `with key=value`, the CLI's `--key value`, the API's
    keywords), grouped below by who reads it: the keys of every design first, then each design's own."""

    # --- task
    env_id: str = "CartPole-v1"
    """Gymnasium id; `MinAtar/<Game>-v1` ids are registered automatically."""
    seed: int = 1
    """Run seed: network init, exploration, replay sampling and training-episode seeds."""
    total_env_steps: int = 100_000
    """Env steps to train for (summed over all envs/workers)."""
    max_episode_steps: int = 0
    """Env steps after which an episode is truncated, in training and on the holdout alike
    (gymnasium's TimeLimit, applied by the one env factory); 0 keeps the env's registered cap.
    An env registered without one is refused unless this is set: an episode that never ends
    would never let the holdout finish."""

    # --- Q-network
    hidden_sizes: tuple[int, ...] = (128, 128)
    """Widths of the MLP's hidden layers (vector observations), or of the conv net's dense layer."""
    layer_norm: bool = False
    """Insert LayerNorm before each hidden ReLU."""

    # --- replay
    buffer_size: int = 50_000
    """Replay capacity in transitions (ring buffer, oldest overwritten)."""
    batch_size: int = 128
    """Transitions per gradient update."""
    learning_starts: int = 1_000
    """Env steps collected before the first update."""
    prioritized: bool = False
    """Proportional prioritized replay (sum tree, importance weights); in actor_learner the
    actors compute each transition's initial priority with their local network (Ape-X)."""
    priority_alpha: float = 0.6
    """Prioritized replay: priority = (|TD error| + 1e-6) ** priority_alpha."""
    priority_beta: float = 0.4
    """Prioritized replay: importance weights (N * P(i)) ** -priority_beta, normalised by their max."""

    # --- DQN update
    lr: float = 5e-4
    """Adam learning rate."""
    adam_eps: float = 1e-8
    """Adam epsilon."""
    gamma: float = 0.99
    """Discount per env step."""
    n_step: int = 3
    """Steps in the bootstrapped return (1 = one-step Q-learning)."""
    double_dqn: bool = True
    """Select the bootstrap action with the online net, evaluate it with the target net."""
    loss: Literal["huber", "mse"] = "huber"
    """TD loss: `huber` (delta 1) or `mse`."""
    max_grad_norm: float = 10.0
    """Clip the global gradient norm to this value; 0 disables clipping."""
    target_update_period: int = 125
    """Learner updates between target-network syncs (125 updates = 500 env steps at utd 0.25)."""
    target_tau: float = 1.0
    """Target sync weight: 1.0 copies (hard sync), below 1 Polyak-averages at every sync."""
    mlp_fast_grad: bool = True
    """MLPs without LayerNorm on CPU: compute the gradient by the hand-derived backward pass
    (checked against autograd in the tests; faster, docs/design-notes.md#mlp_fast_grad); false always
    uses autograd."""
    utd: float = 0.25
    """Update-to-data ratio: learner updates per env step (0.25 = one update per 4 steps)."""

    # --- exploration
    eps_start: float = 1.0
    """Initial epsilon of the epsilon-greedy behaviour policy."""
    eps_end: float = 0.02
    """Final epsilon."""
    eps_decay_steps: int = 20_000
    """Env steps over which epsilon decays linearly from eps_start to eps_end."""

    # --- holdout evaluation
    eval_every: int = 10_000
    """Env steps between holdout checkpoints (a final one always runs at total_env_steps)."""
    eval_episodes: int = 10
    """Episodes per checkpoint, one per fixed holdout seed; 0 disables evaluation (benchmarks)."""
    eval_epsilon: float = 0.0
    """Epsilon of the evaluation policy (0 = greedy)."""

    # --- execution (every design)
    num_workers: int = 1
    """Actor/worker processes or envs (parallel designs; single_env ignores it)."""
    torch_threads: int = 1
    """torch intra-op threads in each process (small nets are fastest with 1)."""
    learner_threads: int = 0
    """torch intra-op threads of the learner alone (actor_learner's main process, vector_env's
    and single_env's one process); 0 = `torch_threads`. Actors and hogwild workers keep one."""
    env_step_cost_us: float = 0.0
    """Busy CPU time added to every env step, in microseconds, to emulate an expensive simulator."""
    env_step_wait_us: float = 0.0
    """Time added to every env step, in microseconds, that blocks without using the CPU: an env
    whose work happens elsewhere (a simulator process, a socket, a device); adds to the busy cost."""
    slow_worker_cost_us: float = 0.0
    """Parallel designs: extra busy CPU per env step for worker 0 alone (one slow actor, env or
    hogwild worker among fast ones: a heavier simulator instance, a busier core); 0 = even."""
    worker_timeout_s: float = 60.0
    """Seconds a worker may make no progress (no env step, no wait-loop heartbeat) before the
    run fails naming it as hung; a worker that dies is reported within a fraction of a second."""
    log_every: int = 1_000
    """Env steps between logged training scalars (keeps metric volume small)."""

    # --- the learner's device (every design but hogwild)
    device: str = "cpu"
    """Device of the learner's tensors: `cpu` or `cuda` (its networks, Adam and replay; acting stays
    on the CPU with a copy of the weights refreshed every `weight_sync_period` updates; hogwild
    refuses cuda). `meta` (no data, learns nothing) is the tests' stand-in for an accelerator."""
    cuda_graph: bool = True
    """device=cuda: replay each whole update (sample, forward, loss, backward, clip, Adam) as one
    captured CUDA graph instead of launching its kernels one by one (the replay designs' learner;
    pqn's updates stay eager): a small net's eager update is bound by launching its kernels, not by
    the GPU's work (docs/design-notes.md#cuda_graph); false launches each kernel. Ignored on the CPU."""

    # --- actor_learner
    backend: Literal["local", "ray", "inprocess"] = "local"
    """actor_learner's transport: `local` (spawned processes and shared memory on this machine), `ray`
    (Ray actors, transitions and weights through Ray's object store; `pip install -e .[ray]`) or
    `inprocess` (the same actors and learner stepped in turn in one process: tests, a debugger; not a
    speed measurement)."""
    weight_sync_period: int = 10
    """actor_learner: learner updates between weight publications to the actors; with a CUDA
    learner, every design's host copy that acts is refreshed on this period too."""
    utd_slack_steps: int = 1_000
    """actor_learner: env steps the actors may run ahead of the utd target before they wait for
    the learner (Acme's rate-limiter error buffer); the learner waits whenever it is ahead.
    vector_env does not read it: its one process acts and learns, so it keeps its learning within
    one vector step (more slack would only let its acting weights age); hogwild's workers each learn
    their own share in turn with their acting."""
    actor_epsilons: Literal["schedule", "apex"] = "schedule"
    """actor_learner: `schedule` (every actor follows eps_start -> eps_end on the global env step)
    or `apex` (fixed per-actor epsilons 0.4 ** (1 + 7 i / (N - 1)), Horgan et al. 2018)."""
    actor_quotas: Literal["equal", "free"] = "equal"
    """actor_learner: `equal` (each actor takes exactly its share of every sync point's env
    steps, so a slow actor makes the others wait there) or `free` (Ape-X: actors claim env steps
    until the run reaches the sync point, so fast actors contribute more)."""
    actor_nice: int = 19
    """actor_learner's actors (backend local) run this much below the learner's priority (0..19; Linux also
    marks them SCHED_BATCH, so a waking actor does not preempt the learner). Past the cores,
    actors that wake on every env step took the learner's core in turns
    (docs/design-notes.md#actor_nice). On a machine with a core per actor it changes nothing.
    0 keeps the learner's priority."""

    # --- actor_learner, backend=ray
    ray_address: str = ""
    """backend=ray: address of a running Ray cluster (`auto`, `ray://host:10001`); empty starts
    a private Ray instance for the run (even beside a running cluster) and shuts it down after."""
    ray_batch_steps: int = 128
    """backend=ray: env steps an actor makes per request; one reply carries their transitions."""
    ray_requests_in_flight: int = 2
    """backend=ray: requests queued per actor, so it steps on while the learner fetches the last reply
    (more hide a longer round trip between hosts, with older acting weights)."""
    actor_restarts: int = 0
    """backend=ray: lost actors (process or node gone, or hung) the run may replace; each
    replacement continues the lost actor's share on any node with a free CPU while the learner
    goes on with the others. 0 fails the run at the first loss, naming the actor and its host."""

    # --- hogwild
    hogwild_lock: bool = False
    """hogwild: wrap every optimizer step in one cross-process lock (the comparison for
    "do workers' updates overwrite each other?"); false is lock-free Hogwild!."""
    optimizer_state: Literal["shared", "per_worker"] = "shared"
    """hogwild: `shared` (one Adam state in shared memory, created before the workers start) or
    `per_worker` (each worker keeps its own Adam moments for the shared parameters)."""
    hogwild_replay: Literal["local", "shared"] = "local"
    """hogwild: `local` (each worker keeps its own replay of its own transitions) or `shared`
    (one replay in shared memory that every worker writes to and samples from)."""

    # --- high_utd
    reset_period: int = 0
    """high_utd: learner updates between parameter resets (Nikishin et al. 2022); 0 disables."""
    reset_layers: Literal["last", "all"] = "last"
    """high_utd: what a reset re-initialises, online and target alike, with its Adam moments:
    `last` (the output layer) or `all` (the whole network)."""

    # --- rollout designs (pqn)
    rollout_steps: int = 128
    """Designs that learn from rollouts, not a replay (pqn): vector steps per rollout, each of
    num_workers env steps; the rollout is learned from once and dropped."""
    rollout_epochs: int = 4
    """Rollout designs: passes over each rollout."""
    rollout_minibatches: int = 4
    """Rollout designs: minibatches each pass over a rollout is split into (one update each)."""
    q_lambda: float = 0.65
    """Rollout designs: lambda of the Q(lambda) targets (0: one-step TD; 1: Monte Carlo returns
    bootstrapped at the rollout's end)."""
    lr_anneal: bool = False
    """Anneal the learning rate linearly to 0 over the run (rollout designs, as CleanRL's pqn)."""

    # --- checkpointing (every design)
    checkpoint_every: int = 0
    """Env steps between checkpoints (single_env, high_utd: at the next episode end; the others
    stop their workers exactly there); 0 disables."""
    checkpoint_path: str = ""
    """Checkpoint file; a run started with an existing file resumes from it, a finished run deletes it."""
    checkpoint_replay: bool = True
    """Include the replay buffer(s) in checkpoints (needed for an exact resume)."""

    def __post_init__(self) -> None:
        validate(self)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, values: dict[str, Any], *, ignore_unknown: bool = False) -> "DQNConfig":
        """Build from loosely typed values (Sacred, CLI): `5e4` for an int, lists for tuples."""
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                if ignore_unknown:
                    continue
                raise ConfigError(f"{key}: unknown config key (valid keys: {', '.join(known)})")
            kwargs[key] = coerce(key, value)
        return cls(**kwargs)

    @property
    def learner_thread_count(self) -> int:
        """torch threads of the process that learns: `learner_threads`, or `torch_threads`."""
        return self.learner_threads or self.torch_threads

    def replace(self, **changes: Any) -> "DQNConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["hidden_sizes"] = list(self.hidden_sizes)
        return out


@functools.cache
def field_types() -> dict[str, Any]:
    """Field name -> its annotation, evaluated: the one statement of each key's type, which the
    coercion below, the range checks' choices and the CLI's parser all read."""
    return typing.get_type_hints(DQNConfig)


def choices(key: str) -> tuple[str, ...] | None:
    """The values a `Literal` key takes, in their declared order (what validate() checks); None for
    any other key."""
    return literals(DQNConfig).get(key)


@functools.cache
def describe() -> dict[str, str]:
    """Field name -> its docstring (the attribute docstrings under each field, read by
    docstring_parser as tyro reads them for the CLI's help; imported here, so a run needs neither)."""
    import docstring_parser

    return {p.arg_name: p.description for p in docstring_parser.parse_from_object(DQNConfig).params
            if p.arg_name in DQNConfig.__dataclass_fields__}


def coerce(key: str, value: Any) -> Any:
    """`value` as key's annotation types it, from the loose types Sacred, JSON and the API hand in
    (`5e4` for an int, a list for a tuple); a value of the wrong kind is a one-line ConfigError."""
    annotation = field_types()[key]
    if annotation is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false (got {value!r})")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()
        ):
            raise ConfigError(f"{key}: must be an integer (got {value!r})")
        return int(value)
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: must be a number (got {value!r})")
        return float(value)
    if typing.get_origin(annotation) is tuple:
        if isinstance(value, int):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise ConfigError(f"{key}: must be a list of positive integers (got {value!r})")
        return tuple(value)
    return value  # str and Literal keys: their values are checked by validate()
