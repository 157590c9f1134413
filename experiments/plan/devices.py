"""Where `plan` puts the learner: the CPU, or CUDA where present, each measured in the loop.

An update alone says little about a CUDA learner: its kernels run while the host goes on stepping
the env, and the host pays launches, the new replay rows' copy, and a wait wherever it reads the
device (a weight publication, a log). So the learner's cost per update on each device is taken
from single_env's own loop with the learner there (`learner_in_loop`: the loop's training time
less its acting, env and replay-store time, per update), and every design is predicted with it in
place of the CPU learner's sample and update. The rest of the components (acting, hand-off, the
roles measured in actor_learner's and hogwild's own runs) are the CPU learner's: a CUDA
prediction is that much less measured, and the confirming run says how it fares.

Without CUDA, `learner_devices()` is just the CPU and the plan is what it was.
"""

from __future__ import annotations

import copy

from architectures.core.config import DQNConfig


def learner_devices() -> list[str]:
    """The devices a plan weighs for the learner: the CPU, and CUDA where torch sees it."""
    import torch

    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def learner_in_loop(cfg: DQNConfig, seconds: float) -> dict:
    """us per update of the learner on `cfg.device` as single_env's loop pays it: `sample` (the
    replay's rows to the device, or the host's sample) and `update` (all the rest of the loop's
    time that is not acting, the env or the store, over its updates: on CUDA the launches and the
    waits for the GPU)."""
    from architectures.designs.single_env import train

    probe = cfg.replace(total_env_steps=400, learning_starts=100, eval_episodes=0, log_every=400, eval_every=400,
                        checkpoint_every=0, checkpoint_path="")
    rate = train(probe)["env_steps_per_sec"]
    steps = int(min(100_000, max(2_000, seconds * rate)))
    result = train(probe.replace(total_env_steps=steps, learning_starts=steps // 5, log_every=steps, eval_every=steps))
    rows, updates = result["time_breakdown"], max(1, result["updates"])
    others = sum(rows[name]["seconds"] for name in ("act", "env_step", "replay_add"))
    sample = rows["sample"]["us_per_call"]
    update = max(0.0, 1e6 * (result["train_seconds"] - others) / updates - sample)
    return {name: {"us": us, "p10": us, "p90": us} for name, us in (("sample", sample), ("update", update))}


def with_learner(costs: dict, learner: dict) -> dict:
    """`costs` (as experiments.components measures them) with the learner's sample and update
    replaced by `learner`'s (from `learner_in_loop` on another device), alone and in the loops."""
    out = copy.deepcopy(costs)
    for name in ("sample", "update"):
        out[name] = dict(learner[name])
        for loop in ("in_loop", "in_loop_waiting"):
            if loop in out:
                out[loop][name] = dict(learner[name])
    return out


def measure_devices(cfg: DQNConfig, costs: dict, devices: list[str], seconds: float, log) -> dict[str, dict]:
    """Device -> the component costs with the learner there (the CPU's are `costs` as measured)."""
    by_device = {"cpu": costs}
    for device in devices:
        if device == "cpu":
            continue
        learner = learner_in_loop(cfg.replace(device=device), seconds)
        log(f"  the learner on {device} in single_env's loop: sample {learner['sample']['us']:,.1f} us, update "
            f"{learner['update']['us']:,.1f} us per update (CPU: {costs['in_loop']['update']['us']:,.1f} us)")
        by_device[device] = with_learner(costs, learner)
    return by_device
