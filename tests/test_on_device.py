"""The prepared script for a lent GPU machine (experiments/on_device.py): its steps, in the order
the issue asks (the CUDA tests first, the plan's predictions before any run), each parsing as a
command, and its CPU-only form skipping the CUDA steps and saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from experiments.on_device import BUSY_SHAPE, main, steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_steps_test_cuda_first_and_predict_before_any_run():
    plan = steps("python", "/tmp/out", 1_500, 10)
    assert [s.name for s in plan] == ["cuda_tests", "plan", "busy_cpu", "busy_cuda", "busy_others", "device_sweep"]
    assert [s.name for s in plan if s.cuda] == ["cuda_tests", "busy_cuda"]
    by_name = {s.name: s.command for s in plan}
    assert by_name["cuda_tests"][3:6] == ["-m", "cuda", "-x"]
    assert "--no-confirm" in by_name["plan"] and all(k in by_name["plan"] for k in BUSY_SHAPE)
    assert "device=cuda" in by_name["busy_cuda"] and "device=cuda" not in by_name["busy_cpu"]
    assert "device=cuda" not in by_name["busy_others"]  # hogwild's workers share CPU parameters


@pytest.mark.parametrize("name,runs", [("busy_cpu", 7), ("busy_others", 8)])
def test_each_sweep_step_parses_and_names_its_runs(name, runs):
    command = next(s.command for s in steps(sys.executable, "/tmp/out", 1_500, 10) if s.name == name)
    at = command.index("--out")
    listing = subprocess.run(command[:at] + ["--dry-run"] + command[at:], cwd=ROOT, capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr[-800:]
    said = listing.stdout + listing.stderr
    assert f"{runs} runs" in said and "total_env_steps=1500" in said and "env_step_cost_us=2200" in said


def test_without_cuda_the_cuda_steps_are_skipped_and_said(tmp_path, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the CUDA steps run here")
    out = tmp_path / "device"
    assert main(["--out", str(out), "--minutes", "1", "--only", "cuda_tests", "--only", "busy_cuda"]) == 0
    manifest = json.load(open(out / "manifest.json"))
    assert manifest["steps"] == {"cuda_tests": {"skipped": "no CUDA on this machine"},
                                 "busy_cuda": {"skipped": "no CUDA on this machine"}}
    assert (tmp_path / "device.tgz").exists()


def test_a_small_machine_runs_the_busy_shape_at_few_workers_only():
    """Under 8 cores the CPU-only form keeps to 8 minutes: single_env, and the other designs at
    SMALL_WORKERS, where the many-core machine runs actor_learner's whole column and 4-16 workers."""
    from experiments.on_device import SMALL_WORKERS, WORKERS, steps

    def cells(small):
        by_name = {s.name: s.command for s in steps("python", "/tmp/x", 1_500, 5, small=small)}
        return {name: cmd[cmd.index("--cells") + 1] for name, cmd in by_name.items() if name.startswith("busy")}

    small, big = cells(True), cells(False)
    assert small["busy_cpu"].split(",") == ["practitioner_shape/single_env"] + [
        f"practitioner_shape/actor_learner/num_workers={n}" for n in SMALL_WORKERS]
    assert big["busy_cpu"] == "practitioner_shape/single_env,practitioner_shape/actor_learner"
    assert len(small["busy_others"].split(",")) == 2 * len(SMALL_WORKERS) < len(big["busy_others"].split(",")) == 2 * len(WORKERS)
