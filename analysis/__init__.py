"""Analysis of stored runs: it reads results only. Of architectures/ it imports the registry of
designs alone (names, order, cost-model entries), nothing that trains and nothing that needs
Sacred (tests/test_imports.py, tests/test_analysis.py)."""
