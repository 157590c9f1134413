"""Wiring of architectures to Sacred: the experiment, named configs, sweeps and benchmarks."""

import warnings

# Sacred imports pkg_resources, whose deprecation warning every process that imports Sacred would
# print (each spawned worker of a run started by experiments.train re-imports it): not ours to fix,
# and not the user's. Set here, before any module of the package imports Sacred.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
