"""Front-end scaling: compile time of long programs, sq beside pyserq.

    python benchmarks/bench_frontend_scale.py [--sizes 10000,100000,200000] [--no-reference]

Three shapes of N lines each: N `let`s, N expression `def`s (none used), and a session body of N statements.  The front end must be
near-linear: the time per line printed for each size should stay about flat
from 10k to 200k lines (issue 14: `let`s and `def`s were quadratic).
"""
from __future__ import annotations

import argparse
import time

HEAD = "run { horizon 10; }\nstage svc : ps(1);\nworkload { arrive poisson(1); }\n"


def lets(n: int) -> str:
    body = ["let c0 = 1;"] + [f"let c{i} = c{i - 1} + {i % 7};" for i in range(1, n)]
    return HEAD + "\n".join(body) + f"\nsession {{ run svc (1); observe x = c{n - 1}; }}\n"


def defs(n: int) -> str:
    # None is used: a program of more than 100,000 tokens may use no def (0.1.2's bound).
    body = [f"def f{i}(x) = x * 2 + {i % 5};" for i in range(n)]
    return HEAD + "\n".join(body) + "\nsession { run svc (1); observe x = 2; }\n"


def statements(n: int) -> str:
    body = [f"  set a{i % 50} = {i} * 2 + now;" for i in range(n)]
    return HEAD + "session {\n  run svc (1);\n" + "\n".join(body) + "\n  observe x = a0;\n}\n"


SHAPES = {"lets": lets, "defs": defs, "statements": statements}


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,200000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--no-reference", action="store_true", help="do not time pyserq")
    args = ap.parse_args()
    import sq

    reference = None
    if not args.no_reference:
        try:
            import pyserq as reference
        except ImportError:
            pass
    print(f"{'shape':<11}{'lines':>8}{'sq s':>9}{'us/line':>9}{'pyserq s':>10}{'sq/pyserq':>10}")
    for shape in args.shapes.split(","):
        for n in map(int, args.sizes.split(",")):
            src = SHAPES[shape](n)
            ours = timed(lambda: sq.compile(source=src))
            line = f"{shape:<11}{n:>8}{ours:>9.2f}{ours / n * 1e6:>9.1f}"
            if reference is not None:
                theirs = timed(lambda: reference.compile(source=src))
                line += f"{theirs:>10.2f}{ours / theirs:>10.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
