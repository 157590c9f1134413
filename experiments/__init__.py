"""Wiring of architectures to Sacred: the two tracked experiments (train.py, timing.py) and their entry
points (sweep.py, docs.py, same_results.py, on_device.py), with packages by role: tracking/ (configs,
host records, stores), sweeps/, plan/, components/ (the cost model's measurements), benches/ and
testbed/ (the namespace hosts)."""

import warnings

# Sacred imports pkg_resources, whose deprecation warning every process that imports Sacred would
# print (each spawned worker of a run started by experiments.train re-imports it): not ours to fix,
# and not the user's. Set here, before any module of the package imports Sacred.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
