"""The reference side of `python -m sq bench`: pyserq 0.1.2's compile and run.

It lives here, outside the package, because nothing under sq/ may import, wrap or call
pyserq. The bench's child process loads this file by its path (`--reference FILE`; from a
source checkout it is found on its own) and calls `implementation()`.
"""
import json


def implementation():
    """(compile, run) of pyserq: run(program, seed) gives the report."""
    import pyserq

    def run(program, seed):
        # pyserq changes a compiled program's seed only through its JSON (every sweep of it pays that)
        if seed == 1:
            return pyserq.run(program)
        ir = json.loads(program.to_json())
        ir["seed"] = seed
        return pyserq.run(pyserq.Program.from_json(json.dumps(ir)))

    return pyserq.compile, run
