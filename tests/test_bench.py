"""experiments/benches/parallel.py's configs: with --named, each design runs as the sweeps run it."""

import json

import pytest

from architectures.cli import parse_config
from experiments.benches import parallel as bench_parallel
from experiments.tracking.configs import NAMED_CONFIGS, resolve


@pytest.mark.parametrize("arch", ["single_env", "actor_learner", "pqn"])
def test_named_runs_each_design_as_the_sweeps_do(arch):
    """The command line bench_parallel builds for a design parses, through the CLI every run goes
    through, to the config the sweeps resolve for (cartpole, design): pqn at its 4 envs with
    LayerNorm and its rollouts, actor_learner at 2 actors, not the shared COMMON learner."""
    values = bench_parallel.design_values(arch, "cartpole")
    argv = [x for k, v in values.items() for x in (f"--{k}", json.dumps(v) if not isinstance(v, str) else v)]
    cfg = parse_config(argv).to_dict()
    expected = resolve(["cartpole", arch], {})
    for key in ("num_workers", "layer_norm", "lr", "batch_size", "hidden_sizes", "rollout_steps", "utd"):
        assert cfg[key] == expected[key], key
    assert cfg["eval_episodes"] == 0  # throughput never includes evaluation
    assert cfg["num_workers"] == NAMED_CONFIGS[arch]["num_workers"]


def test_without_named_every_design_shares_the_cartpole_learner_and_a_bad_name_stops_first(capsys):
    assert bench_parallel.design_values("pqn", None) == bench_parallel.COMMON
    with pytest.raises(SystemExit):
        bench_parallel.main(["--named", "no_such_env"])
    assert "--named: 'no_such_env' is not a named config" in capsys.readouterr().err
