"""What losing a host costs an actor_learner run on Ray, measured on test hosts.

    python -m experiments.benches.lost_host --rounds 5 --out results/benchmarks/lost_host.txt

Three test hosts (experiments/testbed/netns_hosts.py: network namespaces on this machine, one switch,
no route out; the head without CPUs, two nodes with 2 CPUs each). Each round trains CartPole
with 2 Ray actors (`actor_restarts=2`, the env step waiting 1 ms so the run lasts ~15-20 s),
kills every process of a host holding an actor once both are up, and reads from the run's
result: when the learner noticed each loss (after the kill), how long its replacement took to
be ready, env steps never delivered, and the run's env steps/s. A round without a loss is run
first for the speed's comparator. Needs root (ip netns) and Ray. Prints the numbers; it asserts
nothing (tests/test_hosts.py holds the behaviour). The hosts share this machine's cores, so the
times include whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from architectures.core.atomic import atomic_write
from experiments.testbed.netns_hosts import Hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
RUN = ["-m", "architectures", "actor_learner", "--backend=ray", "--num_workers=2", "--actor_restarts=2",
       "--total_env_steps=30000", "--eval_every=10000", "--eval_episodes=2", "--learning_starts=300",
       "--batch_size=16", "--hidden_sizes=16", "--env_step_wait_us=1000", "--worker_timeout_s=30"]


def one_round(hosts: Hosts, seed: int, lose: bool) -> dict:
    cmd = [sys.executable, *RUN, f"--ray_address={hosts.head}", f"--seed={seed}"]
    driver = hosts.popen(1, cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_at, lost = None, None
    try:
        if lose:
            placed = hosts.actor_addresses(2)
            lost = int(placed[0].rsplit(".", 1)[1])
            killed_at = time.time()
            hosts.lose(lost)
        out, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, 9)
            driver.wait()
    if lost is not None:
        hosts.start(lost)
    if driver.returncode != 0:
        return {"failed": err.strip().splitlines()[-1:] if err.strip() else driver.returncode}
    result = json.loads(out[out.index("{\n"):])
    row = {"env_steps": result["env_steps"], "steps_per_s": round(result["env_steps_per_sec"]),
           "lost": result["actors_lost"], "replaced": result["actors_replaced"],
           "undelivered": result["env_steps_undelivered"]}
    if killed_at is not None and result["actor_losses"]:
        row["noticed_after_s"] = [round(loss["noticed_unix"] - killed_at, 2) for loss in result["actor_losses"]]
        row["replaced_after_s"] = [loss["replaced_after_s"] for loss in result["actor_losses"]]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args(argv)
    refused = Hosts.refused()
    if refused:
        raise SystemExit(f"error: {refused}")
    hosts = Hosts(count=3, cpus=2)
    lines = [f"# {' '.join(['python -m experiments.benches.lost_host', *(argv if argv is not None else sys.argv[1:])])}",
             f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
             f"load average {os.getloadavg()[0]:.2f} at the start"]
    try:
        hosts.build()
        for host in (1, 2, 3):
            hosts.start(host, wait=host == 3)
        lines.append(f"no loss (seed 1): {json.dumps(one_round(hosts, 1, lose=False))}")
        print(lines[-1], flush=True)
        rows = []
        for k in range(args.rounds):
            rows.append(one_round(hosts, 11 + k, lose=True))
            lines.append(f"round {k + 1} (seed {11 + k}): {json.dumps(rows[-1])}")
            print(lines[-1], flush=True)
    finally:
        hosts.close()
    noticed = [t for row in rows for t in row.get("noticed_after_s", [])]
    replaced = [t for row in rows for t in row.get("replaced_after_s", []) if t is not None]
    if noticed and replaced:
        lines.append(f"loss noticed after the kill: median {statistics.median(noticed):.2f} s "
                     f"[{min(noticed):.2f}, {max(noticed):.2f}] over {len(noticed)} lost actors; replacement "
                     f"ready after: median {statistics.median(replaced):.2f} s [{min(replaced):.2f}, {max(replaced):.2f}]")
        print(lines[-1])
    if args.out:
        atomic_write(args.out, ("\n".join(lines) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
