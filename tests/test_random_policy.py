"""The random policy's holdout returns (experiments/random_policy.py): played through the one harness,
the same every time, written as one atomic record with its commit."""

import json

from experiments import random_policy


def test_the_random_policy_is_played_on_the_holdout_and_recorded(tmp_path, monkeypatch):
    out = tmp_path / "random.json"
    assert random_policy.main(["--out", str(out), "--episodes", "3", "--games", "SpaceInvaders", "Freeway"]) == 0
    record = json.loads(out.read_text())
    assert set(record["games"]) == {"SpaceInvaders", "Freeway"} and record["commit"]
    game = record["games"]["SpaceInvaders"]
    assert game["episodes"] == 3 and game["return_mean"] == sum(game["returns"]) / 3
    # the holdout's fixed seeds and the harness's fixed RNG: the same returns every time
    assert random_policy.random_returns("SpaceInvaders", 3)["returns"] == game["returns"]
    # at eval_epsilon 1 the network is never consulted: another initialisation plays the same episodes
    from architectures.core import networks

    build = networks.build_q_network
    monkeypatch.setattr(networks, "build_q_network", lambda *args, seed: build(*args, seed=seed + 12345))
    assert random_policy.random_returns("Freeway", 3)["returns"] == record["games"]["Freeway"]["returns"]
