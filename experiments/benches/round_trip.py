"""What a round trip between hosts costs an actor_learner run on Ray, measured on test hosts.

    python -m experiments.benches.round_trip --rounds 5 --out results/benchmarks/round_trip.txt

Two test hosts (experiments/testbed/netns_hosts.py): the head, with no CPUs, runs the driver and its
learner; the node, with 3 CPUs, runs the 3 actors and reaches the switch through a delay line
(experiments/testbed/delay_line.py). Four links, in a rotated order each round: `direct` (the line's ends
joined by a kernel bridge), and the line holding every frame 0, 1 and 5 ms each way (round trips
of ~0.1, ~2 and ~10 ms: the echo probe's median is printed beside each run). Each run trains
CartPole with the `cartpole` config's learner (MLP 128-128, batch 128, utd 0.25) and 3 actors,
its env step not waiting, as the earlier two-host measurement did. The speed is env steps/s
between the first and the last holdout checkpoint (training seconds: evaluation excluded),
so the warm-up before learning starts is left out and >= 60 s of learning is timed. The acting
weights' age at hand-off (updates) is printed beside it. Both hosts share this machine's cores,
with the delay line's process: this measures the transport's cost, not scaling. Needs root
(ip netns), ethtool and Ray. Prints the numbers; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from experiments.tracking.configs import NAMED_CONFIGS
from architectures.core.atomic import atomic_write
from experiments.testbed.netns_hosts import Hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
LINKS = {"direct": None, "line 0 ms": 0.0, "~2 ms": 1.0, "~10 ms": 5.0}  # one way, ms
SETTINGS = ("hidden_sizes", "batch_size", "buffer_size", "learning_starts", "lr", "gamma", "n_step", "utd",
            "target_update_period", "eps_decay_steps")
ECHO = """
import socket, statistics, sys, time
if sys.argv[1] == "serve":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[2], 9001)); s.listen(); c, _ = s.accept()
    while (d := c.recv(16)):
        c.sendall(d)
else:
    s = socket.create_connection((sys.argv[2], 9001)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(50):
        t = time.perf_counter(); s.sendall(b"x"); s.recv(1); times.append((time.perf_counter() - t) * 1e3)
    print(f"{statistics.median(times):.3f}")
"""


def round_trip_ms(hosts: Hosts) -> float:
    """The median of 50 one-byte TCP echoes from the head to the node."""
    server = hosts.popen(2, [sys.executable, "-c", ECHO, "serve", hosts.address(2)])
    try:
        for _ in range(50):
            probe = hosts.run(1, [sys.executable, "-c", ECHO, "ask", hosts.address(2)], timeout=60)
            if probe.returncode == 0:
                return float(probe.stdout)
            time.sleep(0.1)  # the server is not listening yet
        raise RuntimeError(f"echo probe failed: {probe.stderr[-500:]}")
    finally:
        server.kill()
        server.wait()


def one_run(hosts: Hosts, seed: int, steps: int, every: int) -> dict:
    cfg = NAMED_CONFIGS["cartpole"]
    settings = [f"--{k}={','.join(map(str, cfg[k])) if isinstance(cfg[k], list) else cfg[k]}" for k in SETTINGS]
    cmd = [sys.executable, "-m", "architectures", "actor_learner", "--backend=ray", f"--ray_address={hosts.head}",
           "--num_workers=3", f"--total_env_steps={steps}", f"--eval_every={every}", "--eval_episodes=2",
           f"--seed={seed}", *settings]
    done = hosts.run(1, cmd, cwd=ROOT, timeout=900)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:]}
    result = json.loads(done.stdout[done.stdout.index("{\n"):])
    curve, seconds = result["holdout_curve"], result["checkpoint_train_seconds"]
    learning_s = seconds[-1] - seconds[0]
    return {"env_steps": result["env_steps"], "learning_s": round(learning_s, 1),
            "steps_per_s": round((curve[-1]["env_steps"] - curve[0]["env_steps"]) / learning_s),
            "acting_weights_age_updates": (result.get("acting_staleness") or {}).get("mean"),
            "final_holdout": result["final_holdout_return"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=450_000, help="env steps per run (>= 60 s of learning)")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args(argv)
    refused = Hosts.refused()
    if refused:
        raise SystemExit(f"error: {refused}")
    hosts = Hosts(count=2, cpus=3, lined=(2,))
    lines = [f"# {' '.join(['python -m experiments.benches.round_trip', *(argv if argv is not None else sys.argv[1:])])}",
             f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
             f"load average {os.getloadavg()[0]:.2f} at the start"]
    speeds: dict[str, list[float]] = {name: [] for name in LINKS}
    try:
        hosts.build()
        hosts.start(1, wait=False)
        hosts.start(2)
        names = list(LINKS)
        for k in range(args.rounds):
            for name in names[k % len(names):] + names[:k % len(names)]:
                hosts.delay(2, LINKS[name])
                rtt = round_trip_ms(hosts)
                row = {"link": name, "echo_rtt_ms": rtt, **one_run(hosts, 1 + k, args.steps, args.steps // 9)}
                speeds[name] += [row["steps_per_s"]] if "steps_per_s" in row else []
                lines.append(f"round {k + 1} (seed {1 + k}): {json.dumps(row)}")
                print(lines[-1], flush=True)
    finally:
        hosts.close()
    base = speeds["direct"]
    for name, values in speeds.items():
        if values:
            ratios = [v / b for v, b in zip(values, base)]
            lines.append(f"{name}: median {statistics.median(values):,.0f} env steps/s "
                         f"[{min(values):,.0f}, {max(values):,.0f}], {len(values)} runs; "
                         f"per round against direct: median {statistics.median(ratios):.3f} "
                         f"[{min(ratios):.3f}, {max(ratios):.3f}]")
            print(lines[-1])
    if args.out:
        atomic_write(args.out, ("\n".join(lines) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
