"""`python -m experiments.plan`: a measured recommendation for this machine (cli.py), what it measures
beyond the components (measure.py), where it puts the learner (devices.py), its confirming runs
(confirm.py), the cost model's predictions written before a sweep (predict.py), and the env shapes
it is validated on (shapes.py) with the validation's predictions (validation.py)."""
