"""The Sacred experiment behind the `threads` and `device` sweeps: time one DQN gradient step.

    python -m experiments.timing with network=cartpole_mlp batch_size=128 torch_threads=2
    python -m experiments.timing with network=wide_mlp device=cuda

It answers the reporting user's first question properly: how long one update of THE learner
(`DQNLearner.update`, the same code every architecture runs) takes, per torch thread count,
network and batch size, as the median over many updates after a warm-up. The batch comes from
a fixed replay of random transitions and is sampled fresh each update, so its host-to-device
copy is inside the timed step on CUDA (synchronised before the clock stops).

`update_path` says which update (the device sweep times each where CUDA is present):
- `host`: a host batch, the update, its loss read on the host (a CPU learner's update; on CUDA,
  a copy in and a synchronisation per update): each update timed alone;
- `device`: the replay on the device and the whole update there with nothing read back
  (core/device_step.py, what a CUDA learner runs), eager: blocks of `block` updates timed with
  one synchronisation at the end, so the time is the update's throughput cost, as a run pays it;
- `graph`: the same, replayed as one CUDA graph (`cuda_graph`).
For the device paths, `host_us` is the host's time to issue an update (launches) and, on CUDA,
`gpu_us` the GPU's time for it (CUDA events): where the time goes.

The suite's CPU learner is not a practitioner's: an MLP's gradient is hand-derived (`mlp_fast_grad`)
and Adam is the fused kernel without torch.optim's step wrapper (core/dqn.py FusedAdam). With
`mlp_fast_grad=False optimizer=torch` the update is autograd and `torch.optim.Adam` with its defaults,
as a practitioner writes it (host path only): where such a learner's ceiling sits
(the `plain_learner` sweep).
"""

from __future__ import annotations

import signal
import sys
import time

from sacred import SETTINGS, Experiment

from experiments.tracking.host import HOST_INFO, store_source_diff

SETTINGS.CAPTURE_MODE = "sys"
NETWORKS = {
    # name: (observation shape, actions, hidden sizes) -- the suite's Q-networks, by size
    "cartpole_mlp": ((4,), 2, (128, 128)),
    "minatar_conv": ((10, 10, 4), 6, (128,)),
    "wide_mlp": ((64,), 18, (1024, 1024)),
}

PATHS = ("host", "device", "graph")
OPTIMIZERS = ("fused", "torch")

ex = Experiment("update_timing", save_git_info=False, additional_host_info=HOST_INFO)


@ex.config
def _config():
    network = "cartpole_mlp"  # one of NETWORKS
    batch_size = 128  # transitions per update
    torch_threads = 1  # torch intra-op threads
    device = "cpu"  # cpu or cuda
    update_path = "host"  # host, device or graph (see the module docstring)
    mlp_fast_grad = True  # an MLP's hand-derived gradient (False: autograd)
    optimizer = "fused"  # fused (the suite's FusedAdam) or torch (torch.optim.Adam, its defaults)
    block = 20  # device paths: updates per timed block
    updates = 500  # timed updates
    warmup = 100  # untimed updates first (allocator, caches, lazy init)
    seed = 1


@ex.config_hook
def _validate(config: dict, command_name: str, logger) -> dict:
    problems = []
    if config["network"] not in NETWORKS:
        problems.append(f"network: must be one of {', '.join(NETWORKS)} (got {config['network']!r})")
    for key in ("batch_size", "torch_threads", "updates"):
        if not isinstance(config[key], int) or config[key] < 1:
            problems.append(f"{key}: must be an integer >= 1 (got {config[key]!r})")
    if not isinstance(config["warmup"], int) or config["warmup"] < 0:
        problems.append(f"warmup: must be an integer >= 0 (got {config['warmup']!r})")
    if config["device"] != "cpu" and not str(config["device"]).startswith("cuda"):
        problems.append(f"device: must be 'cpu' or 'cuda[:N]' (got {config['device']!r})")
    if config["update_path"] not in PATHS:
        problems.append(f"update_path: must be one of {', '.join(PATHS)} (got {config['update_path']!r})")
    elif config["update_path"] == "graph" and not str(config["device"]).startswith("cuda"):
        problems.append("update_path: 'graph' needs device=cuda (a CUDA graph)")
    if config["optimizer"] not in OPTIMIZERS:
        problems.append(f"optimizer: must be one of {', '.join(OPTIMIZERS)} (got {config['optimizer']!r})")
    elif config["optimizer"] != "fused" and config["update_path"] != "host":
        problems.append("optimizer: torch.optim.Adam is timed on the host path only (update_path=host)")
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        raise SystemExit(2)
    return {}


@ex.main
def main(network: str, batch_size: int, torch_threads: int, device: str, update_path: str, mlp_fast_grad: bool,
         optimizer: str, block: int, updates: int, warmup: int, seed: int, _run) -> dict:
    store_source_diff(_run)  # a run from uncommitted code keeps its diff
    import numpy as np
    import torch

    from architectures.core.config import DQNConfig
    from architectures.core.dqn import DQNLearner
    from architectures.core.networks import build_q_network
    from architectures.core.replay import ReplayBuffer, Transition

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"error: device: {device!r} requested but torch.cuda.is_available() is False")
    torch.set_num_threads(torch_threads)
    obs_shape, actions, hidden = NETWORKS[network]
    cfg = DQNConfig(hidden_sizes=hidden, batch_size=batch_size, torch_threads=torch_threads, device=device,
                    mlp_fast_grad=mlp_fast_grad)
    learner = DQNLearner(build_q_network(obs_shape, actions, hidden, False, seed), cfg)
    if optimizer == "torch":  # the learner steps whatever `optimizer` it holds: zero_grad() and step()
        learner.optimizer = torch.optim.Adam(learner.online.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
    rng = np.random.default_rng(seed)
    replay = ReplayBuffer(4_096, obs_shape, np.float32)
    for _ in range(replay.capacity):
        replay.add(Transition(rng.standard_normal(obs_shape).astype(np.float32),
                              rng.standard_normal(obs_shape).astype(np.float32), int(rng.integers(actions)),
                              float(rng.standard_normal()), 0.99, 0, 0))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    common = {"network": network, "batch_size": batch_size, "device": device, "update_path": update_path,
              "torch_threads": torch_threads, "threads_in_effect": torch.get_num_threads(), "updates": updates,
              "warmup": warmup, "optimizer": type(learner.optimizer).__module__ + "." + type(learner.optimizer).__name__}
    if update_path != "host":
        return {**common, **device_path_times(learner, replay, update_path == "graph", updates, warmup, block, sync)}
    for _ in range(warmup):
        learner.update(replay.sample(batch_size, rng))
    sync()
    times = np.empty(updates)
    for i in range(updates):
        batch = replay.sample(batch_size, rng)
        start = time.perf_counter()
        learner.update(batch)
        sync()
        times[i] = time.perf_counter() - start
    us = times * 1e6
    p10, p50, p90 = np.percentile(us, [10, 50, 90])
    return {**common, "hand_derived_gradient": learner._mlp_gradient is not None,
            "update_us_median": float(p50), "update_us_p10": float(p10), "update_us_p90": float(p90),
            "update_us_mean": float(us.mean())}


def device_path_times(learner, replay, graph: bool, updates: int, warmup: int, block: int, sync) -> dict:
    """us per update of the device update (eager or graphed), in blocks synchronised once each:
    wall per update (`update_us_*`), the host's issue time per update, and the GPU's (CUDA events)."""
    import numpy as np
    import torch

    from architectures.core.device_replay import DeviceReplay
    from architectures.core.device_step import DeviceStep

    mirror = DeviceReplay(replay, learner.device, learner.cfg.batch_size, seed=0)
    mirror.sync()
    step = DeviceStep(learner, mirror, sources=1, graph=graph)
    for _ in range(max(warmup, 1)):
        step()
    sync()
    cuda = learner.device.type == "cuda"
    walls, issues, gpus = [], [], []
    for _ in range(max(1, updates // block)):
        if cuda:
            began_event, ended_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            began_event.record()
        start = time.perf_counter()
        for _ in range(block):
            step()
        issued = time.perf_counter()
        if cuda:
            ended_event.record()
        sync()
        walls.append((time.perf_counter() - start) / block)
        issues.append((issued - start) / block)
        if cuda:
            gpus.append(began_event.elapsed_time(ended_event) / 1e3 / block)
    us = np.array(walls) * 1e6
    p10, p50, p90 = np.percentile(us, [10, 50, 90])
    out = {"update_us_median": float(p50), "update_us_p10": float(p10), "update_us_p90": float(p90),
           "update_us_mean": float(us.mean()), "block": block, "host_us_median": float(np.median(issues) * 1e6),
           "hand_derived_gradient": learner._mlp_gradient is not None}
    if gpus:
        out["gpu_us_median"] = float(np.median(gpus) * 1e6)
    return out


def cli(argv: list[str] | None = None) -> None:
    from experiments.train import attach_observers

    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C stops it, even started with `&` from a script
    argv = list(sys.argv if argv is None else argv)
    ex.run_commandline(attach_observers(ex, argv, default_dir="results/timing"))


if __name__ == "__main__":
    cli()
