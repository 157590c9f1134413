"""Benchmarks that print numbers, each one question (docs/benchmarks.md): `python -m experiments.benches.NAME`."""
