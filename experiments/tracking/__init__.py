"""What every tracked run is wired to: the named configs (configs.py), the machine's record beside
Sacred's host info and the source diff of a dirty tree (host.py), and the run stores whose records
are written atomically (store.py)."""
