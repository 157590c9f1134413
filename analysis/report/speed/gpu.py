"""The learner on CUDA, measured on a lent 16-core machine with one H200 (results/reference/
sixteen_cores_gpu): one update per network, batch and path (the CPU's; CUDA's host-batch update,
its device update eager, and that as a CUDA graph), and actor_learner on the busy 2.2 ms shape with
its learner on the CPU against on CUDA (env steps/s once learning starts, SPEED), each run's bound as
its own breakdown names it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.common import SPEED, FigureData, Note, sweep_runs, macro_name, with_speed
from analysis.report.speed.sixteen import lent_machine

MACHINE = "sixteen_cores_gpu"
TARGETS = {"GpuUpdateTarget": 150, "GpuLearnerTarget": 6_000}
"""Set before the calls: the CartPole MLP's update at batch 32 on CUDA (us), and actor_learner's env
steps/s at 16 actors on the busy shape with its learner on CUDA."""
PATHS = {("cpu", "host"): "CPU", ("cuda", "host"): "CUDA, host batch", ("cuda", "device"): "CUDA, device, eager",
         ("cuda", "graph"): "CUDA graph"}


def _bounds(results) -> list[str]:
    """The roles the runs' own breakdowns name as their bound, each once."""
    return sorted({(r.get("bottleneck") or {}).get("summary", "").split(" (")[0] for r in results} - {""})


def data(rs: RunSet, note: Note) -> FigureData | None:
    timing = sweep_runs(rs.runs, f"{MACHINE}/device")
    shape = sweep_runs(rs.runs, f"{MACHINE}/seed_shape")
    if timing.empty and shape.empty:
        note(f"gpu: no runs of the lent GPU machine ({MACHINE}); experiments.on_device makes them")
        return None
    made = FigureData(pd.concat([timing, shape], ignore_index=True)[["run_id", "sweep", "design", "num_workers",
                                                                      "device", SPEED,
                                                                      "update_us_median"]])
    for name, value in TARGETS.items():
        made.number(name, value)
    rows = []
    elsewhere = sweep_runs(rs.runs, "sixteen_cores/device")  # the same CPU cells on lent machine A
    elsewhere = elsewhere[elsewhere["device"].fillna("cpu") == "cpu"]
    for (network, batch), cell in timing.groupby(["network", "batch_size"]):
        row = {"network, batch": f"{network}, {int(batch)}"}
        theirs = elsewhere[(elsewhere["network"] == network) & (elsewhere["batch_size"] == batch)]["update_us_median"]
        row["CPU, machine A"] = f"{float(theirs.median()):,.0f} us" if len(theirs.dropna()) else "-"
        for (device, path), label in PATHS.items():
            pick = cell[(cell["device"] == device) & (cell["result"].map(lambda r: r.get("update_path", "host")) == path)]
            if pick.empty:
                row[label] = "-"
                continue
            us = float(pick["update_us_median"].median())
            row[label] = f"{us:,.0f} us"
            made.number(macro_name("gpu", network, int(batch), label.replace(",", "")), us)
        rows.append(row)
    made.table("gpu_update", pd.DataFrame(rows),
               "One gradient step on a 16-core machine with one H200 (torch 2.11, the `device` sweep's cells, 300 "
               "updates after 50, median): the CPU's update on another lent machine of that kind (A, "
               "results/reference/sixteen_cores) and on this one; on CUDA the host-batch update (a copy in and a read "
               "back each update), the device update (replay on the GPU, nothing read back) eager, and as one CUDA "
               "graph; the device paths timed in blocks of 20 with one synchronisation (results/reference/"
               "sixteen_cores_gpu).")
    learner = []
    shape = with_speed(shape, note, "gpu")
    shape = shape.assign(learner=[d if d == "cpu" else f"{d} ({'graph' if c.get('cuda_graph') else 'eager'})"
                                  for d, c in zip(shape["device"], shape["config"])])
    for (design, workers, device), cell in shape.groupby(["design", "num_workers", "learner"]):
        speeds = cell[SPEED].to_numpy(float)
        bounds = _bounds(cell["result"])
        learner.append({"design": design, "workers": int(workers), "learner on": device, "runs": len(speeds),
                        "env steps/s once learning (each run)": ", ".join(f"{v:,.0f}" for v in speeds),
                        "bound": " / ".join(bounds) or "-"})
        made.number(macro_name("gpu", design, int(workers), device.split(" ")[0], *device.split(" ")[1:]),
                    float(np.median(speeds)))
    # The same CPU cells on the two other lent 16-core machines (the sixteen_cores store): how far one
    # CPU learner's rate moves between machines of one kind, beside the GPU's gain on its own machine.
    others = with_speed(sweep_runs(rs.runs, "sixteen_cores/seed_shape"), note, "gpu")
    others = others[(others["device"].fillna("cpu") == "cpu")]
    for (design, workers), cell in others.groupby(["design", "num_workers"]):
        if not ((shape["design"] == design) & (shape["num_workers"] == workers)).any():
            continue
        machines = "/".join(sorted({lent_machine(s) for s in cell["source"]}))
        speeds = cell[SPEED].to_numpy(float)
        learner.append({"design": design, "workers": int(workers), "learner on": f"cpu, machine {machines}",
                        "runs": len(speeds), "env steps/s once learning (each run)": ", ".join(f"{v:,.0f}" for v in speeds),
                        "bound": " / ".join(_bounds(cell["result"])) or "-"})
        made.number(macro_name("gpu", design, int(workers), "cpu elsewhere", "max"), float(speeds.max()))
    if learner:
        made.table("gpu_learner", pd.DataFrame(learner),
                   "The busy 2.2 ms shape (12,000 env steps, one run at a time) on the GPU machine (C), env steps/s once "
                   "learning starts with the learner on the CPU, on CUDA eagerly (the first call) or as a CUDA graph "
                   "(the second); each run's own bound. Below them, the same CPU cells on the two other lent 16-core "
                   "machines of that kind (A and B, results/reference/sixteen_cores): how far a CPU learner's rate moves "
                   "from machine to machine. 1-3 runs a cell: no test.")
    return made
