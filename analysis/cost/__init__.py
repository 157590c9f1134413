"""The cost model: each design's env steps/s predicted from its components' measured costs and the
machine's cores (model.py), each design's formula (designs.py) on the terms they share (terms.py)."""
