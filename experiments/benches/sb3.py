"""Benchmark: this suite's `single_env` against Stable-Baselines3's DQN, side by side.

Identical settings (CartPole-v1, MLP 120-84, batch 128, one update per 4 env steps, buffer
10k, learning_starts 1k, target every 500 env steps, Adam, Huber, grad norm 10, 1 torch
thread, no evaluation). Each round starts one fresh process per contender, alternating, and
times it from spawn to exit (start-up included); the ratio is taken per round and the median
reported, so drift in machine load hits both sides alike.

    pip install -e '.[bench]' -c constraints.txt
    python -m experiments.benches.sb3 --steps 50000 --rounds 3
    python -m experiments.benches.sb3 --baseline ../old-checkout   # and single_env from another checkout

With `--baseline DIR` a third contender runs this same benchmark's single_env from the checkout
in DIR (e.g. `git worktree add ../old-checkout <commit>`), in the same alternating rounds, and
the in-loop ratio against it is printed: how a change to the loop moved its speed.

It also prints where the suite's time goes: each component's cost per call inside the loop,
each component's cost alone (warm, in a separate process), and the fraction of the
component-cost bound 1 / (env step and store + forward + utd x (sample + update)) the loop reaches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SETTINGS = dict(env_id="CartPole-v1", hidden_sizes=(120, 84), batch_size=128, utd=0.25, buffer_size=10_000,
                learning_starts=1_000, target_env_steps=500, lr=5e-4, gamma=0.99, max_grad_norm=10.0,
                eps_start=1.0, eps_end=0.05, exploration_fraction=0.2)


def run_ours(steps: int, seed: int) -> dict:
    from architectures.core.config import DQNConfig
    from architectures.designs.single_env import train

    s = SETTINGS
    cfg = DQNConfig(env_id=s["env_id"], seed=seed, total_env_steps=steps, hidden_sizes=s["hidden_sizes"],
                    buffer_size=s["buffer_size"], batch_size=s["batch_size"], learning_starts=s["learning_starts"],
                    lr=s["lr"], gamma=s["gamma"], n_step=1, double_dqn=False, loss="huber",
                    max_grad_norm=s["max_grad_norm"], utd=s["utd"],
                    target_update_period=int(s["target_env_steps"] * s["utd"]),
                    eps_start=s["eps_start"], eps_end=s["eps_end"],
                    eps_decay_steps=int(s["exploration_fraction"] * steps),
                    eval_every=steps, eval_episodes=0, torch_threads=1, log_every=steps)
    result = train(cfg)
    return {"loop_steps_per_sec": result["env_steps_per_sec"], "costs_us": result["component_costs_us"]}


def run_components(steps: int, seed: int) -> dict:
    """Each component's cost alone, warm, in us per call: the inputs of the component-cost bound."""
    import numpy as np
    import torch

    from architectures.core.config import DQNConfig
    from architectures.core.dqn import DQNLearner
    from architectures.core.envs import make_env
    from architectures.core.networks import GreedyPolicy, build_q_network
    from architectures.core.replay import ReplayBuffer, Transition

    torch.set_num_threads(1)
    s = SETTINGS
    cfg = DQNConfig(hidden_sizes=s["hidden_sizes"], n_step=1, double_dqn=False, max_grad_norm=s["max_grad_norm"],
                    lr=s["lr"], batch_size=s["batch_size"])
    env = make_env(s["env_id"])
    rng = np.random.default_rng(seed)
    learner = DQNLearner(build_q_network((4,), 2, cfg.hidden_sizes, False, seed), cfg)
    policy = GreedyPolicy(learner.online, rng)
    replay = ReplayBuffer(s["buffer_size"], (4,), np.float32)

    def timed(fn, calls: int) -> float:
        for _ in range(calls // 10):
            fn()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return 1e6 * (time.perf_counter() - start) / calls

    obs, _ = env.reset(seed=seed)

    def env_step():
        nonlocal obs
        nxt, r, term, trunc, _ = env.step(int(rng.integers(2)))
        replay.add(Transition(obs, nxt, 0, float(r), 0.0 if term else s["gamma"], 0, 0))
        obs = env.reset()[0] if term or trunc else nxt

    costs = {"env_step_and_store": timed(env_step, 20_000),
             "forward": timed(lambda: policy.q_values(obs), 20_000),
             "sample": timed(lambda: replay.sample(s["batch_size"], rng), 5_000)}
    batch = replay.sample(s["batch_size"], rng)
    costs["update"] = timed(lambda: learner.update(batch), 3_000)
    per_step = costs["env_step_and_store"] + costs["forward"] + s["utd"] * (costs["sample"] + costs["update"])
    return {"costs_us": costs, "bound": 1e6 / per_step}


def run_sb3(steps: int, seed: int) -> dict:
    import torch

    torch.set_num_threads(1)
    import gymnasium as gym
    from stable_baselines3 import DQN

    s = SETTINGS
    model = DQN("MlpPolicy", gym.make(s["env_id"]), learning_rate=s["lr"], buffer_size=s["buffer_size"],
                learning_starts=s["learning_starts"], batch_size=s["batch_size"], tau=1.0, gamma=s["gamma"],
                train_freq=int(1 / s["utd"]), gradient_steps=1, target_update_interval=s["target_env_steps"],
                exploration_fraction=s["exploration_fraction"], exploration_initial_eps=s["eps_start"],
                exploration_final_eps=s["eps_end"], max_grad_norm=s["max_grad_norm"],
                policy_kwargs=dict(net_arch=list(s["hidden_sizes"])), device="cpu", seed=seed, verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return {"loop_steps_per_sec": steps / (time.perf_counter() - start)}


def spawn(role: str, steps: int, seed: int, baseline: str | None = None) -> tuple[float, dict]:
    """One fresh process per run; `baseline` runs role `ours` from the checkout in that folder."""
    start = time.perf_counter()
    child = "ours" if role == "baseline" else role
    out = subprocess.run([sys.executable, "-m", "experiments.benches.sb3", "--child", child, "--steps", str(steps),
                          "--seed", str(seed)], check=True, capture_output=True, text=True,
                         cwd=baseline if role == "baseline" else None)
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000, help="env steps per run (default 50000)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", metavar="DIR", help="also run single_env from the checkout in DIR")
    parser.add_argument("--child", choices=["ours", "sb3", "components"], help=argparse.SUPPRESS)
    parser.add_argument("--dry-run", action="store_true", help="check the arguments and the install, then stop")
    args = parser.parse_args()
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "experiments", "bench_sb3.py")):
        parser.error(f"--baseline: {args.baseline!r} is not a checkout of this suite (no experiments/benches/sb3.py)")
    if args.steps < 2_000 or args.rounds < 1:
        parser.error("--steps must be >= 2000 (learning starts at 1000) and --rounds >= 1")
    if args.child:
        fn = {"ours": run_ours, "sb3": run_sb3, "components": run_components}[args.child]
        print(json.dumps(fn(args.steps, args.seed)))
        return

    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        if not args.dry_run:
            parser.exit(2, "error: stable-baselines3 is not installed: pip install -e '.[bench]' -c constraints.txt\n")
    if args.dry_run:
        print(f"bench_sb3: {args.rounds} round(s) of {args.steps:,} env steps, ours against SB3's DQN (dry run)",
              file=sys.stderr)
        return
    rows = []
    roles = ["ours", "sb3"] + (["baseline"] if args.baseline else [])
    for r in range(args.rounds):
        for role in roles[r % len(roles):] + roles[:r % len(roles)]:  # rotate who goes first
            wall, info = spawn(role, args.steps, args.seed + r, args.baseline)
            rows.append({"round": r, "role": role, "wall": wall, "process_steps_per_sec": args.steps / wall, **info})
            print(f"round {r} {role:>8}: {wall:6.2f} s wall, {args.steps / wall:7,.0f} env steps/s whole process, "
                  f"{info['loop_steps_per_sec']:7,.0f} in the training loop", flush=True)
    pairs = list(zip([x for x in rows if x["role"] == "ours"], [x for x in rows if x["role"] == "sb3"]))
    ratios = [o["process_steps_per_sec"] / s["process_steps_per_sec"] for o, s in pairs]
    loop_ratios = [o["loop_steps_per_sec"] / s["loop_steps_per_sec"] for o, s in pairs]
    print(f"\nthroughput ratio single_env / SB3 DQN, whole process: median {statistics.median(ratios):.2f}x "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}; rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    print(f"throughput ratio, training loop only:                median {statistics.median(loop_ratios):.2f}x "
          f"(range {min(loop_ratios):.2f}-{max(loop_ratios):.2f})")
    if args.baseline:
        ours = [x["loop_steps_per_sec"] for x in rows if x["role"] == "ours"]
        base = [x["loop_steps_per_sec"] for x in rows if x["role"] == "baseline"]
        per_round = [o / b for o, b in zip(ours, base)]
        print(f"single_env in the training loop: this checkout median {statistics.median(ours):,.0f} env steps/s, "
              f"baseline {args.baseline} median {statistics.median(base):,.0f}; ratio per round "
              f"{', '.join(f'{x:.3f}' for x in per_round)}, median {statistics.median(per_round):.3f}")
        whole = [o["process_steps_per_sec"] / b["process_steps_per_sec"] for o, b in
                 zip([x for x in rows if x["role"] == "ours"], [x for x in rows if x["role"] == "baseline"])]
        print(f"single_env, whole process, this checkout / baseline: median {statistics.median(whole):.3f} "
              f"(range {min(whole):.3f}-{max(whole):.3f})")
    last = pairs[-1][0]
    costs = ", ".join(f"{k} {v:.1f}" for k, v in last["costs_us"].items() if k != "eval")
    print(f"\nsingle_env in-loop cost per call (last round, us): {costs}")
    _, alone = spawn("components", args.steps, args.seed)
    costs = ", ".join(f"{k} {v:.1f}" for k, v in alone["costs_us"].items())
    loop = statistics.median(o["loop_steps_per_sec"] for o, _ in pairs)
    print(f"each component alone, warm (us per call): {costs}")
    print(f"component-cost bound 1 / (env step and store + forward + utd x (sample + update)) = {alone['bound']:,.0f} env steps/s;"
          f" the training loop's median {loop:,.0f} is {loop / alone['bound']:.0%} of it")


if __name__ == "__main__":
    main()
