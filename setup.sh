#!/usr/bin/env bash
# Create .venv and install the suite with its test extras and Ray (so the Ray backend's tests
# run too), from this repo's own files only.
# Idempotent: re-running it on a set-up machine checks the install and returns.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# constraints.txt pins torch to the CPU build (a looser pin downloads a multi-GB CUDA build)
# and setuptools below 82 (sacred 0.8.7 imports pkg_resources).
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt "setuptools<82" wheel
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test,ray${EXTRAS:+,$EXTRAS}]"
