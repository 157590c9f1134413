"""Wiring of architectures to Sacred: the experiment, named configs, sweeps and benchmarks."""
