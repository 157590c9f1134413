"""What each piece of the designs costs on this machine, the cost model's inputs: measured warm and
alone (alone.py), as the loops pay it (loops.py), as the multi-process roles pay it (roles.py),
gathered by measure.py; `python -m experiments.components [with ...]` records them as a tracked run."""
