#!/usr/bin/env bash
# Create .venv and install the suite with its test extras and Ray (so the Ray backend's tests
# run too), from this repo's own files only, at the exact versions of requirements.lock (those the
# committed reference runs recorded); LOCK= ./setup.sh installs from pyproject.toml's ranges instead.
# Idempotent: re-running it on a set-up machine checks the install and returns.
#   ./setup.sh --paper   also installs LaTeX, Latin Modern fonts (main.tex's) and pdftoppm from Debian's
#                        packages, for `make -C paper`
#   ./setup.sh --browser also installs Chromium and its driver from Debian's packages, for the
#                        report page's browser test (tests/test_report_page.py)
#   ./setup.sh --hosts   also installs ethtool from Debian's packages, for the test hosts' delay
#                        line (tests/test_hosts.py; the hosts themselves need root and iproute2)
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--paper" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    if ! command -v latexmk >/dev/null 2>&1 || ! command -v pdftoppm >/dev/null 2>&1 \
            || ! kpsewhich lmodern.sty >/dev/null 2>&1; then
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
            texlive-latex-recommended texlive-fonts-recommended lmodern latexmk poppler-utils
    fi
elif [ "${1:-}" = "--browser" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium chromium-driver
    fi
elif [ "${1:-}" = "--hosts" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    if ! command -v ethtool >/dev/null 2>&1 && ! [ -x /usr/sbin/ethtool ] && ! [ -x /sbin/ethtool ]; then
        $SUDO apt-get update -q
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q ethtool
    fi
elif [ -n "${1:-}" ]; then
    echo "setup.sh: unknown option '$1' (valid: --paper, --browser, --hosts)" >&2
    exit 2
fi
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# constraints.txt pins torch to the CPU build (a looser pin downloads a multi-GB CUDA build)
# and setuptools below 82 (sacred 0.8.7 imports pkg_resources).
LOCK=${LOCK-requirements.lock}
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt ${LOCK:+-c "$LOCK"} "setuptools<82" wheel
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt ${LOCK:+-r "$LOCK"} \
    -e ".[test,ray${EXTRAS:+,$EXTRAS}]"
