"""`python benchmarks/run.py [...]` is the same as `python -m sq bench [...]`."""
import sys

from sq.cli import main

raise SystemExit(main(["bench", *sys.argv[1:]]))
