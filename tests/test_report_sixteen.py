"""Stores made on another machine (results/reference/sixteen_cores): read apart from this machine's
sweeps, and drawn beside the practitioner's curve with each point's bound."""

from __future__ import annotations

import json
import os
import shutil

from analysis.io.load import MACHINE_FILE, load_runs, machine_of
from analysis.report.speed import sixteen

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIXTEEN = os.path.join(ROOT, "results", "reference", "sixteen_cores")


def test_another_machines_store_keeps_its_runs_out_of_this_machines_sweeps(tmp_path):
    here = tmp_path / "here"
    shutil.copytree(os.path.join(SIXTEEN, "machine_a", "busy_cpu"), here / "busy")
    shutil.copytree(os.path.join(SIXTEEN, "machine_a", "busy_cpu"), tmp_path / "there" / "busy")
    (tmp_path / "there" / MACHINE_FILE).write_text(json.dumps({"machine": "elsewhere"}))
    rs = load_runs([str(tmp_path)])
    assert set(rs.runs["machine"]) == {"", "elsewhere"}
    assert set(rs.runs["sweep"]) == {"seed_shape", "elsewhere/seed_shape"}
    local = rs.on_machine("")
    assert set(local.runs["sweep"]) == {"seed_shape"} and len(local.runs) == len(rs.runs) // 2
    assert set(local.metrics["run_id"]) <= set(local.runs["run_id"])
    assert machine_of(str(here)) == ""


def test_the_sixteen_core_table_names_each_points_bound():
    notes = []
    made = sixteen.data(load_runs([SIXTEEN]), notes.append)
    points = made.parts["points"].set_index(["design", "num_workers"])
    # env steps/s once learning starts (sixteen.SPEED): 391 and 3,417 over the whole run
    assert round(points.loc[("single_env", 1), sixteen.SPEED]) == 384
    assert points.loc[("actor_learner", 8), "runs"] == 3 and round(points.loc[("actor_learner", 8), "low"]) == 3372
    assert points.loc[("actor_learner", 1), "bound"] == "actors"
    assert points.loc[("actor_learner", 16), "bound"] == "learner"
    assert points.loc[("vector_env", 16), "bound"] == "envs"
    assert points.loc[("hogwild", 16), "bound"].startswith("workers")
    assert made.parts["emulated"] is None  # no 2-core shape_confirm runs in these stores
    numbers = dict((name, value) for name, value, _ in made.numbers)
    assert round(numbers["SixteenActorLearnerOneTwoGain"], 1) == round(4612 / 384, 1)  # 4,864 / 391 over the run


def test_the_gpu_tables_keep_each_path_and_learner_apart():
    from analysis.report.speed import gpu

    made = gpu.data(load_runs([os.path.join(ROOT, "results", "reference", "sixteen_cores_gpu")]), lambda _: None)
    update = made.tables[0][1].set_index("network, batch")
    assert update.loc["cartpole_mlp, 32", "CUDA graph"] == "189 us" and update.loc["minatar_conv, 128", "CPU"] != "-"
    learner = made.tables[1][1].set_index(["design", "workers", "learner on"])
    assert learner.loc[("actor_learner", 16, "cuda (graph)"), "bound"] == "actors"
    assert learner.loc[("actor_learner", 16, "cpu"), "bound"] == "learner"


def test_the_gpu_tables_set_the_same_cpu_cells_of_the_other_lent_machines_beside_them():
    """The GPU machine's CPU update and CPU-learner runs are one machine's: the same cells on machines A and
    B (the sixteen_cores store) stand beside them, so a GPU gain can be read against how far a CPU rate
    moves from machine to machine."""
    from analysis.report.speed import gpu

    stores = [os.path.join(ROOT, "results", "reference", name) for name in ("sixteen_cores_gpu", "sixteen_cores")]
    made = gpu.data(load_runs(stores), lambda _: None)
    update = made.tables[0][1].set_index("network, batch")
    assert update.loc["cartpole_mlp, 32", "CPU, machine A"] == "358 us" and update.loc["cartpole_mlp, 32", "CPU"] == "719 us"
    learner = made.tables[1][1].set_index(["design", "workers", "learner on"])
    elsewhere = learner.loc[("actor_learner", 16, "cpu, machine A/B")]
    assert elsewhere["runs"] == 3 and elsewhere["env steps/s once learning (each run)"] == "3,521, 4,462, 3,325"
    assert ("single_env", 1, "cpu, machine A") in learner.index
    assert not any(on.startswith("cpu, machine") and n == 8 for _, n, on in learner.index)  # no GPU-machine cell at 8
