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

from analysis.load import RunSet
from analysis.report.common import FigureData, Note, _sweep, macro_name
from analysis.report.shape import PRACTITIONER, PRACTITIONER_CORES

SWEEP = "sixteen_cores/seed_shape"
EMULATION = "shape_confirm"
DESIGNS = ("single_env", "actor_learner", "vector_env", "hogwild")


def _bound(arch: str, workers: int, result: dict) -> str:
    if arch == "single_env":
        return "process"
    summary = (result.get("bottleneck") or {}).get("summary")
    if summary:
        return summary.split(" ", 1)[0]
    cpu = result.get("cpu") or {}  # hogwild: each worker steps and learns; how busy they were says the bound
    return f"workers ({cpu['cores_busy'] / workers:.0%} busy each)" if cpu.get("cores") else "?"


def _points(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (arch, n), cell in runs.groupby(["architecture", "num_workers"]):
        speeds = cell["env_steps_per_sec"].to_numpy(float)
        bounds = sorted({_bound(arch, int(n), r) for r in cell["result"]})
        rows.append({"architecture": arch, "num_workers": int(n), "runs": len(cell),
                     "env_steps_per_sec": float(np.median(speeds)), "low": float(speeds.min()),
                     "high": float(speeds.max()), "bound": " / ".join(bounds)})
    frame = pd.DataFrame(rows)
    frame["order"] = frame["architecture"].map({a: i for i, a in enumerate(DESIGNS)})
    return frame.sort_values(["order", "num_workers"], ignore_index=True).drop(columns="order")


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = _sweep(rs.runs, SWEEP)
    runs = runs[runs["architecture"].isin(DESIGNS)]
    if runs.empty:
        note(f"sixteen_cores: no runs of `{SWEEP}` (results/reference/sixteen_cores, from a 16-core machine)")
        return None
    points = _points(runs)
    emulation = _sweep(rs.on_machine("").runs, EMULATION)
    emulated = _points(emulation[emulation["architecture"].isin(DESIGNS)]) if not emulation.empty else None
    points["machine"] = "16 cores, busy env"
    frame = points if emulated is None else pd.concat([points, emulated.assign(machine="2 cores, waiting env")],
                                                      ignore_index=True)
    made = FigureData(frame, parts={"points": points, "emulated": emulated})
    single = float(points.loc[points["architecture"] == "single_env", "env_steps_per_sec"].iloc[0])
    table = points.assign(speedup=points["env_steps_per_sec"] / single)
    made.table("sixteen_cores_shape", pd.DataFrame({
        "design": table["architecture"], "workers": table["num_workers"], "runs": table["runs"],
        "env steps/s, median [min, max]": [f"{m:,.0f} [{lo:,.0f}, {hi:,.0f}]" for m, lo, hi in
                                           zip(table["env_steps_per_sec"], table["low"], table["high"])],
        "x single_env": table["speedup"].map("{:.1f}".format), "bound (its runs' breakdown)": table["bound"]}),
        "The practitioner's shape on a 16-core machine (Intel Xeon, one thread a core): the env step burns 2.2 ms "
        "of CPU, the cartpole learner at batch 32 and utd 0.25, 12,000 env steps a run, one run at a time, seeds "
        "101-102 (results/reference/sixteen_cores). Speed-ups are point estimates over 1-3 runs a cell; no test "
        "stands behind them.")
    made.number("SixteenSingleEnv", single)
    for _, row in table.iterrows():
        key = macro_name("sixteen", row["architecture"], int(row["num_workers"]))
        made.number(key, row["env_steps_per_sec"])
        made.number(key + "Gain", row["speedup"], "{:.1f}")
    made.number("SixteenPractitionerGain", float(PRACTITIONER["env_steps_per_sec"].iloc[-1] /
                                                 PRACTITIONER["env_steps_per_sec"].iloc[0]), "{:.1f}")
    return made


def plot(report, made: FigureData) -> None:
    from analysis.report.plotting import PALETTE, plt

    points, emulated = made.parts["points"], made.parts["emulated"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for arch in DESIGNS[1:]:
        sub = points[points["architecture"] == arch]
        if sub.empty:
            continue
        ax.errorbar(sub["num_workers"], sub["env_steps_per_sec"],
                    yerr=[sub["env_steps_per_sec"] - sub["low"], sub["high"] - sub["env_steps_per_sec"]],
                    marker="o", ms=4, capsize=2, color=PALETTE[arch], label=f"{arch}, 16 cores")
        labelled = sub if arch != "hogwild" else sub.tail(1)  # hogwild's workers bound it at every count
        for _, row in labelled.iterrows():
            ax.annotate(row["bound"].split(" (")[0], (row["num_workers"], row["env_steps_per_sec"]),
                        textcoords="offset points", xytext=(4, 5 if arch == "actor_learner" else -11), fontsize=7,
                        color=PALETTE[arch])
        if emulated is not None:
            em = emulated[emulated["architecture"] == arch]
            if not em.empty:
                ax.plot(em["num_workers"], em["env_steps_per_sec"], ":", marker=".", color=PALETTE[arch], lw=1,
                        label=f"{arch}, 2 cores, the env waiting (emulation)")
    single = points[points["architecture"] == "single_env"]
    ax.axhline(float(single["env_steps_per_sec"].iloc[0]), color=PALETTE["single_env"], lw=1,
               label="single_env, 16 cores")
    ax.errorbar(PRACTITIONER["workers"], PRACTITIONER["env_steps_per_sec"],
                yerr=[PRACTITIONER["env_steps_per_sec"] - PRACTITIONER["low"],
                      PRACTITIONER["high"] - PRACTITIONER["env_steps_per_sec"]],
                color="black", marker="s", ms=5, capsize=3, lw=1.5,
                label=f"the practitioner ({PRACTITIONER_CORES} logical cores, their env)")
    ax.set_xlabel("workers (actor processes, envs or hogwild workers)")
    ax.set_ylabel("env steps/s")
    ax.set_xticks(sorted(set(points["num_workers"]) | set(PRACTITIONER["workers"])))
    ax.set_xlim(0, 17)
    ax.set_title("The practitioner's shape: an env step of 2.2 ms, the learner at utd 0.25", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    report.figure(fig, "sixteen_cores_shape", made.data)
