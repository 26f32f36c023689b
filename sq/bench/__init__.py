"""`python -m sq bench`: the standard models timed in sq and, when it is installed, in pyserq 0.1.2.

The models (`models.py`) are the rows of the speed targets; each is run in fresh
processes (`measure.py` starts `_child.py`), the implementations' rounds taken in
turn, and the table (`table.py`) gives the least CPU time of the rounds, the
ratio, and whether the two reports' JSON texts are equal. pyserq is never
imported here: only a child process that measures it does, as the other
implementation timed; nothing sq computes depends on it.
"""
from sq.bench.table import main

__all__ = ["main"]
