"""The docs pages written from the code, so they cannot drift from it (tests/test_docs.py).

    python -m experiments.docs            # rewrites docs/configuration.md and docs/sweeps.md
    python -m experiments.docs --check    # exit 1, naming the page, where a page differs from the code

docs/configuration.md: every DQNConfig key with its default and docstring (architectures/core/
config.py), then every named config (experiments/configs.py) and what it sets. docs/sweeps.md:
every named sweep (experiments/sweeps.py) with its description, seeds, runs and time estimate.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
GENERATED = "<!-- written by `python -m experiments.docs` from the code; edit the code, not this page -->"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1000:
        return f"{value:,.0f}"
    return str(value) if value != "" else '""'


def configuration() -> str:
    from architectures.core.config import DQNConfig, describe
    from experiments.configs import NAMED_CONFIGS

    defaults = DQNConfig().to_dict()
    lines = [GENERATED, "", "# Configuration", "",
             "Every run is one `DQNConfig` (`architectures/core/config.py`), validated when it is built: a bad key or "
             "value stops the command before any work, in one line naming the key. Give keys on the command line "
             "after `with` (Sacred's syntax), in `train(design, **config)`, or to a sweep after `with`.", "",
             "Units: `total_env_steps`, `learning_starts`, `eps_decay_steps`, `eval_every` and `log_every` count env "
             "steps summed over all workers; `target_update_period` counts learner updates; `utd` is learner updates "
             "per env step, enforced exactly and reported as achieved (`realised_utd`).", "",
             "| key | default | meaning |", "|---|---|---|",
             "| `architecture` | `single_env` | which design runs (the experiment's key; `train(design, ...)` in Python) |"]
    for key, doc in describe().items():
        lines.append(f"| `{key}` | `{_value(defaults[key])}` | {_cell(doc)} |")
    lines += ["", "## Named configs", "",
              "Applied in order after `with`, before `key=value` overrides: `with cartpole actor_learner num_workers=8`. "
              "A key a named config leaves out keeps its default above.", "", "| name | sets |", "|---|---|"]
    for name, values in NAMED_CONFIGS.items():
        sets = ", ".join(f"`{k}={_value(v)}`" for k, v in values.items())
        lines.append(f"| `{name}` | {sets} |")
    return "\n".join(lines) + "\n"


def sweeps() -> str:
    from experiments.sweep_grid import expand
    from experiments.sweeps import SEED_SETS, SWEEPS

    lines = [GENERATED, "", "# Named sweeps", "",
             "A sweep is data (`experiments/sweeps.py`): a grid of named configs and overrides per scale, crossed with "
             "seeds from a named set. `small` is sized for a 2-core machine (the default), `paper` for the writeup's "
             "numbers. `--dry-run` lists every run and the time estimate without running anything:", "",
             "```bash", ".venv/bin/python -m experiments.sweep NAME --dry-run", "```", "",
             "Seed sets: " + "; ".join(f"`{name}` {seeds[0]}-{seeds[-1]}" for name, seeds in SEED_SETS.items())
             + ". Tuning sweeps draw calibration seeds; everything quoted as a result draws evaluation seeds.", "",
             "| sweep | what it runs | seeds (small, paper) | runs (small) | minutes (small, 2 cores) |",
             "|---|---|---|---|---|"]
    for name, sweep in SWEEPS.items():
        runs = len(expand(sweep, "small", seeds=sweep.seeds["small"]))
        lines.append(f"| `{name}` | {_cell(sweep.description)} | {sweep.seeds['small']}, {sweep.seeds['paper']} "
                     f"({sweep.seed_set}) | {runs} | {sweep.minutes['small']:g} |")
    return "\n".join(lines) + "\n"


PAGES = {"configuration.md": configuration, "sweeps.md": sweeps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    args = parser.parse_args(argv)
    stale = []
    for page, make in PAGES.items():
        path, text = os.path.join(DOCS, page), make()
        old = open(path).read() if os.path.exists(path) else None
        if args.check:
            if old != text:
                stale.append(page)
        elif old != text:
            os.makedirs(DOCS, exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote docs/{page}")
    if stale:
        print(f"error: docs/{', docs/'.join(stale)} differ from the code: run `python -m experiments.docs`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
