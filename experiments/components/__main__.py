"""`python -m experiments.components [with ...]`: the components measured as a tracked Sacred run."""

import sys

from experiments.components.measure import tracked_experiment
from experiments.train import attach_observers

experiment = tracked_experiment()
experiment.run_commandline(attach_observers(experiment, list(sys.argv)))
