"""What a run needs of this machine, counted before anything is spawned or allocated.

`architectures.preflight` calls `check_machine` after the config's own checks (config._validate:
pure bounds) and before the design's own (shared memory): a run that would exhaust the machine
or cannot start on it stops with one line naming the key, what it needs and the limit, before
Sacred records anything (tests/test_config_limits.py). The byte counts are lower bounds
(activations, allocator slack and the interpreter's own growth are not counted), so a refused
run is one that could not have fitted.
"""

from __future__ import annotations

import math
import os

import numpy as np
import psutil

from architectures.core.config import ConfigError, DQNConfig
from architectures.core.envs import EnvSpec, episode_limit
from architectures.core.replay import transition_dtype

WORKER_PROCESS_BYTES = 150 * 2**20
"""Private memory of one spawned worker process (python, numpy, torch, gymnasium, this package, an
env and a small net): actor_learner's actors and hogwild's workers. It counts a worker's private
memory only, since torch's shared libraries are page cache that every process of the run shares
(the measurement behind it: docs/design-notes.md#limits)."""
ENV_PROCESS_BYTES = 20 * 2**20
"""vector_env's env process (a worker that steps one env: no torch), smaller than a worker for
lacking torch; its private memory, counted the same way (docs/design-notes.md#limits)."""
WORKERS_PER_CORE = 32
MIN_WORKER_LIMIT = 64
SPAWNING = {"actor_learner": ("actor", WORKER_PROCESS_BYTES), "hogwild": ("worker", WORKER_PROCESS_BYTES),
            "vector_env": ("env", ENV_PROCESS_BYTES)}
"""The designs that start one process per `num_workers`, what each is, and what it costs."""
LEARNER_COPIES = 5
"""Parameter-sized tensors one learner keeps: online, target, Adam's two moments, gradients."""


def worker_limit(cores: int) -> int:
    """The most worker processes a run may start: max(64, 32 x cores). Generous on purpose: a
    worker whose env step blocks without using a CPU (a remote simulator, a robot, a sleep) leaves
    its core to others, so 64 actors on 2 cores is a regime worth running; 1,000 is a typo."""
    return max(MIN_WORKER_LIMIT, WORKERS_PER_CORE * cores)


def available_memory_bytes() -> int:
    """Memory a run can still take: psutil's available (Linux: /proc/meminfo's MemAvailable),
    capped by a cgroup v2 limit where one is set (psutil does not read cgroups)."""
    available = int(psutil.virtual_memory().available)
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit != "max":
            room = max(0, int(limit) - used)
            available = min(available, room)
    except (OSError, ValueError):
        pass
    return available


def parameter_shapes(spec: EnvSpec, hidden_sizes, layer_norm: bool) -> list[tuple]:
    """The shapes of networks.QNetwork's parameters, in `parameters()` order, without building it
    (tests/test_config_limits.py checks them against a built one): the MinAtar conv torso for
    (H, W, C) observations, then the dense head (with LayerNorm's weight and bias per layer)."""
    shapes: list[tuple] = []
    if len(spec.obs_shape) == 3:
        h, w, c = spec.obs_shape
        shapes += [(16, c, 3, 3), (16,)]
        width = 16 * (h - 2) * (w - 2)
    else:
        width = int(np.prod(spec.obs_shape))
    for out in hidden_sizes:
        shapes += [(out, width), (out,)] + ([(out,), (out,)] if layer_norm else [])
        width = out
    shapes += [(spec.num_actions, width), (spec.num_actions,)]
    return shapes


def replay_bytes(cfg: DQNConfig, spec: EnvSpec, capacity: int) -> int:
    """Bytes of one replay of `capacity` records (replay.ReplayBuffer's one array), with the
    prioritized replay's sum tree (float64 nodes, twice the leaves rounded up to a power of 2)."""
    nbytes = capacity * transition_dtype(spec.obs_shape, spec.obs_dtype).itemsize
    if cfg.prioritized:
        nbytes += 2 * max(2, 1 << (capacity - 1).bit_length()) * 8
    return nbytes


def worker_replay_size(cfg: DQNConfig) -> int:
    """The rows of each hogwild worker's own replay (`hogwild_replay=local`): the run's buffer split
    evenly, as the workers make them and as their memory is counted here."""
    return max(1, cfg.buffer_size // cfg.num_workers)


def run_replay_bytes(name: str, cfg: DQNConfig, spec: EnvSpec) -> int:
    """Every replay a run keeps: hogwild's local replays are num_workers rings of buffer_size //
    num_workers records each, its shared replay one ring plus a sequence number per row."""
    if name == "hogwild" and cfg.hogwild_replay == "local":
        return cfg.num_workers * replay_bytes(cfg, spec, worker_replay_size(cfg))
    if name == "hogwild":
        return replay_bytes(cfg, spec, cfg.buffer_size) + 8 * cfg.buffer_size
    return replay_bytes(cfg, spec, cfg.buffer_size)


def network_copies(name: str, cfg: DQNConfig) -> int:
    """Parameter-sized tensors of a run: the learner's five; actor_learner's actors hold a network
    each and the learner publishes into one weights block; hogwild's workers share online, target
    (and a shared Adam state) but each keeps its gradients (and, per_worker, its Adam moments)."""
    n = cfg.num_workers
    if name == "actor_learner":
        return LEARNER_COPIES + n + 1
    if name == "hogwild":
        return 2 + (2 if cfg.optimizer_state == "shared" else 2 * n) + n
    return LEARNER_COPIES


def _size(nbytes: float) -> str:
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.1f} MB"


def check_memory(name: str, cfg: DQNConfig, spec: EnvSpec, available: int | None) -> None:
    """Refuse a run whose processes, replay and networks need more than `available` bytes, naming
    the key of the largest part."""
    if available is None:
        return
    kind, per_process = SPAWNING.get(name, ("", 0))
    processes = cfg.num_workers * per_process if per_process else 0
    params = sum(math.prod(shape) for shape in parameter_shapes(spec, cfg.hidden_sizes, cfg.layer_norm))
    copies = network_copies(name, cfg)
    record = transition_dtype(spec.obs_shape, spec.obs_dtype).itemsize
    parts = {"num_workers": (processes, f"{cfg.num_workers:,} {kind} processes need"),
             "buffer_size": (run_replay_bytes(name, cfg, spec),
                             f"a replay of {cfg.buffer_size:,} transitions of {record} B needs"),
             "hidden_sizes": (4 * params * copies, f"{list(cfg.hidden_sizes)} makes {params:,} float32 parameters; "
                                                   f"the run's {copies} copies of them need")}
    total = sum(nbytes for nbytes, _ in parts.values())
    if total <= available:
        return
    key = max(parts, key=lambda k: parts[k][0])
    nbytes, what = parts[key]
    whole = f" (the run ~{_size(total)} in all)" if total > 1.05 * nbytes else ""
    raise ConfigError(f"{key}: {what} ~{_size(nbytes)}{whole}, {_size(available)} is available")


def available_cores() -> int:
    """The cores this process may run on (os.sched_getaffinity; a container's cpuset counts)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def check_machine(name: str, cfg: DQNConfig, spec: EnvSpec) -> None:
    """The checks that need the env spec or this machine: cores, memory, CUDA, n_step within an
    episode (envs.episode_limit)."""
    cores = available_cores()
    for key in ("torch_threads", "learner_threads"):
        if getattr(cfg, key) > cores:
            raise ConfigError(f"{key}: {getattr(cfg, key):,} threads per process, but this process may run on "
                              f"{cores} core(s) (os.sched_getaffinity); at most {cores}")
    if name in SPAWNING and cfg.num_workers > worker_limit(cores):
        raise ConfigError(f"num_workers: {cfg.num_workers:,} {SPAWNING[name][0]} processes on {cores} core(s); at "
                          f"most {worker_limit(cores)} (max({MIN_WORKER_LIMIT}, {WORKERS_PER_CORE} x cores))")
    cap, _ = episode_limit(cfg.env_id, cfg.max_episode_steps)
    if cfg.n_step > cap:
        raise ConfigError(f"n_step: {cfg.n_step:,} steps is longer than {cfg.env_id}'s episodes "
                          f"(max_episode_steps {cap}); at most {cap}")
    if cfg.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"device: {cfg.device!r} but torch.cuda.is_available() is false on this machine")
        if int(cfg.device.partition(":")[2] or 0) >= torch.cuda.device_count():
            raise ConfigError(f"device: {cfg.device!r} but this machine has {torch.cuda.device_count()} CUDA "
                              f"device(s)")
    check_memory(name, cfg, spec, available_memory_bytes())


def checkpoint_bytes(name: str, cfg: DQNConfig, spec: EnvSpec) -> int:
    """Bytes of one checkpoint of the run, near enough to check free space before it starts:
    its replays (when checkpointed), online and target networks with Adam's two moments (and
    hogwild's per-worker moments), and 1 MB for RNG states, counters and the holdout so far."""
    params = sum(int(np.prod(shape)) for shape in parameter_shapes(spec, cfg.hidden_sizes, cfg.layer_norm))
    moments = 2 * (cfg.num_workers if name == "hogwild" and cfg.optimizer_state == "per_worker" else 1)
    replay = run_replay_bytes(name, cfg, spec) if cfg.checkpoint_replay else 0
    return replay + 4 * params * (2 + moments) + 2**20
