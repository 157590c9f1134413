"""How well it learns at equal env steps: the report families on holdout returns (the headline curves
and their window check, stability, improvement, the MinAtar suite, utd, pqn, Ape-X's epsilons, and
learning at the practitioner's worker counts with its equivalence verdicts)."""
