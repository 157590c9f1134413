"""What one log's event-file writes cost on this machine, apart from any run.

The `tensorboard_cost` sweep measures the writer inside runs; this names its parts: importing
TensorBoard (once per process, in a fresh interpreter that has torch already), and one log's
writes (the scalars and histograms a run's main process reports at a log), as the main thread's
time and as the process's CPU, the writer's own thread included (closed, so its queue is drained).

    python -m experiments.benches.event_files --logs 500 --scalars 19 --histograms 5
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

import numpy as np

IMPORT = ("import time, torch; t = time.perf_counter(); from torch.utils.tensorboard import SummaryWriter; "
          "print(time.perf_counter() - t)")


def import_seconds() -> float:
    """Seconds to import TensorBoard's writer in a fresh interpreter that has imported torch."""
    done = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def log_costs(logs: int, scalars: int, histograms: int, values: int = 128) -> dict[str, float]:
    """Per log: the main thread's ms and the process's CPU ms (the writer thread's included)."""
    from architectures.core.event_files import TensorBoardReporter

    batch = np.random.default_rng(0).random(values)
    with tempfile.TemporaryDirectory() as folder:
        writer = TensorBoardReporter(folder)
        writer.scalar("warm_up", 0.0, 0)  # opens the file: once per run, before its first log
        cpu, wall = time.process_time(), time.perf_counter()
        for step in range(1, logs + 1):
            for i in range(scalars):
                writer.scalar(f"scalar_{i}", float(i), step)
            for i in range(histograms):
                writer.histogram(f"histogram_{i}", batch, step)
            writer.progress(step, logs, 0.0, None)  # the log's end, as Run.log says it
        main = time.perf_counter() - wall
        writer.close()
        cpu = time.process_time() - cpu
    return {"main_thread_ms": 1e3 * main / logs, "process_cpu_ms": 1e3 * cpu / logs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=500, help="logs written per round")
    parser.add_argument("--scalars", type=int, default=19, help="scalars a log writes (actor_learner writes 19)")
    parser.add_argument("--histograms", type=int, default=5, help="histograms a log writes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dry-run", action="store_true", help="say what would be timed, time nothing")
    args = parser.parse_args(argv)
    if args.dry_run:
        print(f"would time: the writer's import in {args.rounds} fresh processes, and {args.rounds} rounds of "
              f"{args.logs} logs of {args.scalars} scalars and {args.histograms} histograms")
        return
    imports = [import_seconds() for _ in range(args.rounds)]
    print(f"import TensorBoard's writer: median {1e3 * np.median(imports):.0f} ms "
          f"[{1e3 * min(imports):.0f}, {1e3 * max(imports):.0f}] over {args.rounds} fresh processes")
    rounds = [log_costs(args.logs, args.scalars, args.histograms) for _ in range(args.rounds)]
    for key in ("main_thread_ms", "process_cpu_ms"):
        values = [r[key] for r in rounds]
        print(f"one log ({args.scalars} scalars, {args.histograms} histograms of 128 values), {key}: "
              f"median {np.median(values):.2f} [{min(values):.2f}, {max(values):.2f}] over {args.rounds} rounds")


if __name__ == "__main__":
    main()
