"""plan's confirming runs: a recommended point run for real, in a fresh process, beside what the
cost model predicts for that very run (its unlearned start included)."""

from __future__ import annotations

import json
import subprocess
import sys

from experiments.plan.measure import ROOT, last_line


def confirm(cfg, design: str, workers: int, predicted: float, seconds: float, costs: dict, cores: int) -> dict:
    """Run `design` at `workers` for about `seconds` (evaluation off) in a fresh process, and
    predict that very run: its first learning_starts env steps go without updates, so it is
    compared with `over_a_run`, not with the steady state the table shows."""
    steps = int(min(200_000, max(5_000, predicted * seconds)))
    run_cfg = cfg.replace(num_workers=workers, total_env_steps=steps, eval_every=steps, eval_episodes=0,
                          learning_starts=min(cfg.learning_starts, steps // 10), log_every=steps,
                          checkpoint_every=0, checkpoint_path="")
    from analysis.cost.model import medians, over_a_run

    this_run = over_a_run(design, workers, medians(costs), utd=cfg.utd, cores=cores, total_env_steps=steps,
                          learning_starts=run_cfg.learning_starts, weight_sync_period=cfg.weight_sync_period)
    args = [item for k, v in run_cfg.to_dict().items()
            for item in (f"--{k}", json.dumps(v) if not isinstance(v, str) else v) if v != ""]
    proc = subprocess.run([sys.executable, "-m", "architectures", design, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=max(600, 20 * seconds))
    if proc.returncode != 0:
        raise RuntimeError(f"{design} ({workers}) failed: {last_line(proc)}")
    result = json.loads(proc.stdout)
    return {"design": design, "workers": workers, "env_steps": steps,
            "measured_env_steps_per_sec": result["env_steps_per_sec"], "predicted_env_steps_per_sec": predicted,
            "predicted_for_this_run": this_run,
            "bottleneck_measured": (result.get("bottleneck") or {}).get("summary")}
