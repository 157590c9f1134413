"""A named config presented as a design's validated settings is exactly what its committed runs ran:
the claim it carries ("solves CartPole") is then a claim about runs made at that command."""

from __future__ import annotations

import glob
import json
import os

import pytest

from architectures.core.config import DQNConfig
from experiments.tracking.configs import resolve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_ONLY = {"seed", "checkpoint_every", "checkpoint_path"}
"""What a sweep sets per run (its seed; a checkpoint at each holdout so a killed run resumes)."""


def _committed(store: str) -> list[dict]:
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(ROOT, "results", "reference", store, "*",
                                                                       "config.json")))]


@pytest.mark.parametrize("named,store,solved", [("cartpole_pqn", "pqn", 0.8)])
def test_a_validated_named_config_is_what_its_committed_runs_ran(named, store, solved):
    values = resolve([named], {})
    runs = _committed(store)
    assert len(runs) >= 5
    defaults = DQNConfig().to_dict()
    for config in runs:
        ran = {k: config.get(k, defaults.get(k)) for k in values if k not in RUN_ONLY}
        if "design" in ran:  # records before the key was `design` say `architecture`
            ran["design"] = config.get("design", config.get("architecture"))
        assert ran == {k: v for k, v in values.items() if k not in RUN_ONLY}
    finals = []
    for path in sorted(glob.glob(os.path.join(ROOT, "results", "reference", store, "*", "run.json"))):
        run = json.load(open(path))
        finals.append(run["result"]["final_holdout_return"])
    assert sum(r >= 475 for r in finals) / len(finals) >= solved  # the claim, as run: it ends solving CartPole
