"""The uniform random policy's holdout return on each MinAtar game, through the one evaluation
harness (the same holdout seeds, episode caps and sticky actions every run is scored on), so the
MinAtar aggregate can be normalised from random play up: (return - random) / (anchor - random).

    python -m experiments.random_policy --out results/reference/random_policy.json

A policy that acts at random ignores its network: the harness plays an untrained one at
eval_epsilon 1.0. Many more episodes than a run's checkpoint plays (`--episodes`, 500 by default,
holdout seeds HOLDOUT_SEED_BASE + k), since one number per game stands in every normalised score.
The record is written atomically with the commit and the command that made it; analysis/ reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from experiments.sweeps.cells import MINATAR_GAMES

GAMES = ("Breakout", *MINATAR_GAMES)


def random_returns(game: str, episodes: int) -> dict:
    """The harness's holdout returns of the random policy on `game` (minatar_cpu's settings)."""
    from architectures.core.config import DQNConfig
    from architectures.core.envs import make_env
    from architectures.core.evaluation import HoldoutEvaluator
    from architectures.core.networks import build_q_network
    from experiments.tracking.configs import algorithm_values, resolve

    values = algorithm_values(resolve(["minatar_cpu"], {"env_id": f"MinAtar/{game}-v1", "eval_episodes": episodes,
                                                        "eval_epsilon": 1.0}))
    cfg = DQNConfig(**{k: v for k, v in values.items() if k != "design"})
    probe = make_env(cfg.env_id)
    net = build_q_network(probe.observation_space.shape, int(probe.action_space.n), cfg.hidden_sizes,
                          cfg.layer_norm, seed=0)
    probe.close()
    evaluator = HoldoutEvaluator(cfg, net)
    try:
        began = time.perf_counter()
        result = evaluator.evaluate(0)
    finally:
        evaluator.close()
    returns = np.asarray(result["returns"], dtype=float)
    return {"env_id": cfg.env_id, "episodes": len(returns), "return_mean": float(returns.mean()),
            "return_sem": float(returns.std(ddof=1) / np.sqrt(len(returns))), "returns": returns.tolist(),
            "truncated": int(result["truncated"]), "seconds": round(time.perf_counter() - began, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.random_policy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the record to write (JSON)")
    parser.add_argument("--episodes", type=int, default=500, help="holdout episodes per game (default: %(default)s)")
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES, metavar="GAME",
                        help=f"games (default: all: {', '.join(GAMES)})")
    args = parser.parse_args(argv)
    if args.episodes < 2:
        parser.error("--episodes: at least 2 (the record carries each game's standard error)")
    from architectures.core.atomic import atomic_write
    from experiments.tracking import host

    games = {}
    for game in args.games:
        games[game] = random_returns(game, args.episodes)
        print(f"{game}: random policy {games[game]['return_mean']:.2f} +- {games[game]['return_sem']:.2f} "
              f"over {args.episodes} holdout episodes ({games[game]['seconds']:.0f} s)", file=sys.stderr)
    tree = host.git()
    record = {"what": "the uniform random policy's holdout return per MinAtar game (experiments/random_policy.py)",
              "command": "python -m experiments.random_policy " + " ".join(argv if argv is not None else sys.argv[1:]),
              "commit": tree["commit"], "dirty": tree["dirty"], "games": games}
    atomic_write(args.out, (json.dumps(record, indent=1) + "\n").encode())
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
