"""The practitioner's answer: the answer table (table.py), learning per second of training
(per_hour.py, and wall_clock.py's composition of speed and learning), and where every reference
set came from (provenance.py)."""
