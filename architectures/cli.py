"""`python -m architectures <design> --key value ...`: run one design without Sacred (architectures/__main__.py)."""

from __future__ import annotations

import argparse
import ast
import json
import sys

from architectures.core.config import ConfigError, DQNConfig, describe
from architectures.core.errors import RunError, plain_warnings


def parse_config(argv: list[str] | None = None) -> DQNConfig:
    parser = argparse.ArgumentParser(description="Train one design (no experiment tracking).")
    parser.add_argument("--dry-run", action="store_true", help="check the config, the env and this machine, then stop")
    parser.add_argument("--tensorboard", metavar="DIR", help="write the run's curves as TensorBoard event files "
                        "under DIR while it trains (watch with: tensorboard --logdir DIR)")
    for name, doc in describe().items():
        parser.add_argument(f"--{name}", help=doc.replace("%", "%%"))  # argparse formats help with %
    args = parser.parse_args(argv)
    values = {}
    for key, raw in vars(args).items():
        if raw is None or key in ("dry_run", "tensorboard"):
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


def main(design: str, argv: list[str] | None = None) -> None:
    from architectures import get_train_fn
    from architectures.api import event_folder
    from architectures.core.event_files import TensorBoardReporter
    from architectures.core.metrics import PrintReporter, Reporters

    from architectures import before_run, preflight

    argv = list(sys.argv[2:] if argv is None else argv)
    plain_warnings()
    cfg = parse_config(argv)
    try:  # a dry run makes the checks with no side effect; a run also takes its checkpoint's lock
        (preflight if "--dry-run" in argv else before_run)(design, cfg)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    if "--dry-run" in argv:
        print(f"{design}: the config, the env and this machine check out (dry run: nothing trained)",
              file=sys.stderr)
        return
    folder = _tensorboard_dir(argv)
    curves = TensorBoardReporter(event_folder(folder, design, cfg)) if folder else None
    try:
        result = get_train_fn(design, cfg.backend)(cfg, Reporters(PrintReporter(), curves))
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
    finally:
        if curves is not None:
            curves.close()
    json.dump(result, sys.stdout, indent=1)
    print()


def _tensorboard_dir(argv: list[str]) -> str | None:
    """--tensorboard DIR (or --tensorboard=DIR), as parse_config accepted it."""
    for i, arg in enumerate(argv):
        if arg == "--tensorboard" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--tensorboard="):
            return arg.split("=", 1)[1]
    return None
