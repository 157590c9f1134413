"""Named sweeps, end to end: what a sweep is (spec.py), the catalog of named sweeps (catalog.py) and
their grids study by study (cells.py), the grid crossed with seeds (grid.py), what a sweep will do
before it starts (plan.py), how its runs start (runners.py), where they are stored and read back
(stores.py), and whether a stored run counts (records.py). `python -m experiments.sweep` runs one."""
