"""The practitioner's shape on 16 real cores, beside the practitioner's own curve and the 2-core
emulation of that regime.

Reads the `sixteen_cores/seed_shape` runs (results/reference/sixteen_cores: a 16-core machine, the
env step burning 2.2 ms of CPU in the process that steps it, one run at a time) and, for the
emulation, the `shape_confirm` runs made here on 2 cores with an env step that WAITS 2.2 ms (a
waiting env lets 2 cores host many workers; what it leaves out: envs that need a core each, and
their contention for memory and caches). Each 16-core point is labelled with the bound its runs'
own time breakdown names: the role busy ~100% of the time (`actors`, `learner`, `envs`), single_env's
one process, and hogwild's workers, which each step and learn, by the cores they kept busy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.io.load import LEARNING_RATE, RunSet
from analysis.report.framework.claims import CPU_FULL, cpu_bound
from analysis.report.framework.common import FigureData, Note, sweep_runs, macro_name
from analysis.report.speed.shape import PRACTITIONER, PRACTITIONER_CORES

SWEEP = "sixteen_cores/seed_shape"
EMULATION = "shape_confirm"
DESIGNS = ("single_env", "actor_learner", "vector_env", "hogwild")
SPEED = LEARNING_RATE
"""The one speed measure: env steps/s once learning starts (the practitioner's own curve is theirs as reported)."""


SHORT = {"actors": "A", "learner": "L", "envs": "E", "workers": "W", "CPU": "C", "process": "P"}
"""The figure's one-letter bounds (its caption spells them out)."""


def bound(arch: str, workers: int, result: dict) -> str:
    """The CPU where the run had more workers than cores and kept >= CPU_FULL of them busy, else the
    role its own breakdown names as busy (single_env: its one process; hogwild: its workers, which
    each step and learn)."""
    if cpu_bound(workers, result):
        return "CPU"
    if arch == "single_env":
        return "process"
    summary = (result.get("bottleneck") or {}).get("summary")
    if summary:
        return summary.split(" ", 1)[0]
    return "workers" if arch == "hogwild" else "?"


_bound = bound


def lent_machine(source: str) -> str:
    """Which lent machine a run came from, by its sub-store (results/reference/sixteen_cores/README.md:
    machine_a/ and cuda_timing/ are one machine, machine_b/ a second: the records' hostnames are all `vm`,
    the GPU ids in logs/*_host.txt tell the machines apart)."""
    parts = str(source).replace("\\", "/").split("/")
    return "B" if "machine_b" in parts else "A" if {"machine_a", "cuda_timing"} & set(parts) else "?"


def _points(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (arch, n), cell in runs.groupby(["design", "num_workers"]):
        speeds = cell[SPEED].to_numpy(float)
        bounds = sorted({bound(arch, int(n), r) for r in cell["result"]})
        # the cores busy of the median run (the faster of two), as the shape tables quote it: one rule for
        # one number wherever it is printed
        middle = cell.iloc[int(np.argsort(speeds)[len(speeds) // 2])]["result"]
        busy = [(middle.get("cpu") or {}).get("cores_busy", np.nan)]
        rows.append({"design": arch, "num_workers": int(n), "runs": len(cell),
                     "machines": "+".join(sorted({lent_machine(s) for s in cell.get("source", pd.Series(["?"] * len(cell)))})),
                     SPEED: float(np.median(speeds)), "low": float(speeds.min()),
                     "seconds": float(cell["train_seconds"].median()),
                     "high": float(speeds.max()), "bound": " / ".join(bounds),
                     "cores_busy": float(np.nanmedian(busy)) if np.isfinite(busy).any() else np.nan})
    frame = pd.DataFrame(rows)
    frame["order"] = frame["design"].map({a: i for i, a in enumerate(DESIGNS)})
    return frame.sort_values(["order", "num_workers"], ignore_index=True).drop(columns="order")


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, SWEEP)
    runs = runs[runs["design"].isin(DESIGNS)]
    if runs.empty:
        note(f"sixteen_cores: no runs of `{SWEEP}` (results/reference/sixteen_cores, from a 16-core machine)")
        return None
    points = _points(runs)
    emulation = sweep_runs(rs.on_machine("").runs, EMULATION)
    emulated = _points(emulation[emulation["design"].isin(DESIGNS)]) if not emulation.empty else None
    points["machine"] = "16 cores, busy env"
    frame = points if emulated is None else pd.concat([points, emulated.assign(machine="2 cores, waiting env")],
                                                      ignore_index=True)
    made = FigureData(frame, parts={"points": points, "emulated": emulated})
    single = float(points.loc[points["design"] == "single_env", SPEED].iloc[0])
    table = points.assign(speedup=points[SPEED] / single)
    made.table("sixteen_cores_shape", pd.DataFrame({
        "design": table["design"], "workers": table["num_workers"], "runs": table["runs"], "machine": table["machines"],
        "env steps/s once learning, median [min, max]": [f"{m:,.0f} [{lo:,.0f}, {hi:,.0f}]" for m, lo, hi in
                                           zip(table[SPEED], table["low"], table["high"])],
        "x single_env": table["speedup"].map("{:.1f}".format),
        "cores busy (the median run)": table["cores_busy"].map("{:.1f}".format),
        "bound (its runs' breakdown)": table["bound"]}),
        "The practitioner's shape on a 16-core machine (Intel Xeon, one thread a core): the env step burns 2.2 ms "
        "of CPU, the cartpole learner at batch 32 and utd 0.25, 12,000 env steps a run, one run at a time, seeds "
        "101-102 (results/reference/sixteen_cores), on two lent machines of one kind, A and B (B ran no single_env: "
        "its ratios are over A's). Speed-ups are point estimates over 1-3 runs a cell; no test stands behind them. "
        "Left out by status: 6 runs with the learner on CUDA that failed before their first env step and a cut-off "
        "vector_env (12) on B (the store's README)")
    if emulated is not None:
        for _, row in emulated[emulated["design"] == "actor_learner"].iterrows():
            made.number(macro_name("sixteen emulation actor_learner", int(row["num_workers"]), "bound"), row["bound"],
                        "{}")
        al = emulated[(emulated["design"] == "actor_learner") & (emulated["num_workers"] >= 12)]
        if not al.empty:
            made.number("SixteenEmulationCoresBusyMin", float(al["cores_busy"].min()), "{:.2f}")
            made.number("SixteenEmulationCoresBusyMax", float(al["cores_busy"].max()), "{:.2f}")
    for _, row in points.iterrows():
        made.number(macro_name("sixteen", row["design"], int(row["num_workers"]), "bound"), row["bound"], "{}")
        made.number(macro_name("sixteen", row["design"], int(row["num_workers"]), "runs"), int(row["runs"]),
                    "{:d}")
    made.number("SixteenSingleEnv", single)
    cores = runs["result"].map(lambda r: (r.get("cpu") or {}).get("cores")).dropna()
    if not cores.empty:
        made.number("SixteenCores", int(cores.mode().iloc[0]), "{:d}")
    costs = runs["config"].map(lambda c: c.get("env_step_cost_us")).dropna()
    if not costs.empty:
        made.number("SixteenCostMs", float(costs.mode().iloc[0]) / 1000, "{:g}")
    made.number("SixteenCpuFull", 100 * CPU_FULL, "{:.0f}")
    for _, row in table.iterrows():
        key = macro_name("sixteen", row["design"], int(row["num_workers"]))
        made.number(key, row[SPEED])
        made.number(key + "Gain", row["speedup"], "{:.1f}")
    made.number("SixteenPractitionerGain", float(PRACTITIONER["env_steps_per_sec"].iloc[-1] /  # as they reported it
                                                 PRACTITIONER["env_steps_per_sec"].iloc[0]), "{:.1f}")
    return made


def plot(report, made: FigureData) -> None:
    """16-core runs (solid, each point lettered with its bound), the 2-core emulation (dotted) and the
    practitioner's curve (black squares), on a log2 worker axis that holds the emulation's 32 actors."""
    from analysis.report.framework.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, plt

    points, emulated = made.parts["points"], made.parts["emulated"]
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.3))
    for arch in DESIGNS[1:]:
        sub = points[points["design"] == arch]
        if sub.empty:
            continue
        ax.errorbar(sub["num_workers"], sub[SPEED],
                    yerr=[sub[SPEED] - sub["low"], sub["high"] - sub[SPEED]],
                    marker=MARKERS[arch], ms=4, capsize=2, color=PALETTE[arch], label=f"{arch}, 16 cores")
        for _, row in sub.iterrows():
            letters = "/".join(SHORT.get(b, b) for b in row["bound"].split(" / "))
            ax.annotate(letters, (row["num_workers"], row[SPEED]), textcoords="offset points",
                        xytext=(-4, 6 if arch == "actor_learner" else -11), fontsize=7, color=PALETTE[arch],
                        ha="right")
        if emulated is not None:
            em = emulated[emulated["design"] == arch]
            if not em.empty:
                ax.plot(em["num_workers"], em[SPEED], ":", marker=MARKERS[arch], ms=3, mfc="none",
                        color=PALETTE[arch], lw=1, label=f"{arch}, 2 cores, env waiting")
    single = points[points["design"] == "single_env"]
    ax.axhline(float(single[SPEED].iloc[0]), color=PALETTE["single_env"], lw=1,
               label="single_env, 16 cores")
    if emulated is not None and (emulated["design"] == "single_env").any():
        ax.axhline(float(emulated.loc[emulated["design"] == "single_env", SPEED].iloc[0]),
                   color=PALETTE["single_env"], lw=1, ls=":", label="single_env, 2 cores, env waiting")
    ax.errorbar(PRACTITIONER["workers"], PRACTITIONER["env_steps_per_sec"],
                yerr=[PRACTITIONER["env_steps_per_sec"] - PRACTITIONER["low"],
                      PRACTITIONER["high"] - PRACTITIONER["env_steps_per_sec"]],
                color="black", marker="s", ms=5, capsize=3, lw=1.5, ls="--",
                label=f"the practitioner ({PRACTITIONER_CORES} logical cores, their env)")
    ax.set_xscale("log", base=2)
    ticks = sorted(set(points["num_workers"]) | set(PRACTITIONER["workers"])
                   | (set(emulated["num_workers"]) if emulated is not None else set()))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("workers (actor processes, envs or hogwild workers)")
    ax.set_ylabel("env steps/s")
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    report.figure(fig, "sixteen_cores_shape", made.data)
