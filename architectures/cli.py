"""`python -m architectures <design> --key value ...`: run one design without Sacred (architectures/__main__.py)."""

from __future__ import annotations

import argparse
import ast
import json
import sys

from architectures.core.config import ConfigError, DQNConfig, describe
from architectures.core.errors import RunError


def parse_config(argv: list[str] | None = None) -> DQNConfig:
    parser = argparse.ArgumentParser(description="Train one architecture (no experiment tracking).")
    parser.add_argument("--dry-run", action="store_true", help="check the config, the env and this machine, then stop")
    for name, doc in describe().items():
        parser.add_argument(f"--{name}", help=doc)
    args = parser.parse_args(argv)
    values = {}
    for key, raw in vars(args).items():
        if raw is None or key == "dry_run":
            continue
        if raw.lower() in ("true", "false"):  # YAML/JSON spelling, as Sacred accepts it
            values[key] = raw.lower() == "true"
            continue
        try:
            values[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            values[key] = raw  # a plain string such as an env id
    try:
        return DQNConfig.from_dict(values)
    except ConfigError as err:
        parser.exit(2, f"error: {err}\n")


def main(architecture: str, argv: list[str] | None = None) -> None:
    from architectures import get_train_fn
    from architectures.core.metrics import PrintReporter

    from architectures import preflight

    argv = list(sys.argv[2:] if argv is None else argv)
    cfg = parse_config(argv)
    if "--dry-run" in argv:
        try:
            preflight(architecture, cfg)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)
        print(f"{architecture}: the config, the env and this machine check out (dry run: nothing trained)",
              file=sys.stderr)
        return
    try:
        result = get_train_fn(architecture, cfg.backend)(cfg, PrintReporter())
    except ConfigError as err:  # found once the run looks at its machine: shared memory, a checkpoint
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except RunError as err:  # a fault of the run that names itself: an env that raised, a worker, a NaN
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # every worker is stopped on the way out; nothing is tracked here
        print("error: interrupted (Ctrl-C); nothing is recorded without tracking (its checkpoint, if "
              "checkpoint_path was set, is kept: the same command resumes from it)", file=sys.stderr)
        sys.exit(130)
    json.dump(result, sys.stdout, indent=1)
    print()
