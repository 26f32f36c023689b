"""Front-end speed: parse + link of a generated 300-line program.

    python benchmarks/bench_frontend.py [--lines 300] [--repeat 20]

Prints the median and best wall time of sq.compile(source=...) and of
pyserq.compile(source=...) when pyserq is installed. The issue's target:
under 100 ms for 300 lines.
"""
from __future__ import annotations

import argparse
import statistics
import time


def program(lines: int) -> str:
    """A realistic program of about `lines` lines: pools, stages, a long session body."""
    head = [
        "let lam = 2;",
        "let N = 4;",
        "pool kv[N] { cap 4096; block 16; evict lru; }",
        "stage gpu[N] : step { budget 2048; chunk 512; cost 0.005 + tokens / 40000 + kv_decode / 2e6; memory kv; }",
        "stage net : ps(1);",
        "stage think : delay;",
        "def svc(x) = ~exp(x) + 0.01;",
        "run { horizon 1000; warmup 100; seed 3; }",
        "workload { arrive poisson(lam); init { set prompt = 100 + ~uniform(0, 900); set out_len = 10 + ~exp(200); } }",
        "gauge busy_kv = sum k in N (used(kv[k]));",
        "session {",
        "  set r = floor(~uniform(0, N));",
        "  set t0 = now;",
    ]
    body = []
    i = 0
    while len(head) + len(body) < lines - 1:
        body += [
            f"  set a{i} = min(prompt, {i + 1}) * 2 + max(out_len, 3) / (1 + abs({i} - r));",
            f"  branch (a{i} > {i}) {{ run net (svc(0.01)); }} else {{ run think (~det(0.001)); }}",
            f"  hold kv[r] (prompt + {i}) {{ run gpu[r] prefill (prompt); run gpu[r] decode (out_len); }}",
            f"  observe lat{i % 7} = now - t0 + a{i} * 0;",
        ]
        i += 1
    return "\n".join(head + body + ["}"]) + "\n"


def best_and_median(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    src = program(args.lines)
    n = src.count("\n")

    import sq

    sq.compile(source=src)  # warm: grammar tables are built once per process
    best, med = best_and_median(lambda: sq.compile(source=src), args.repeat)
    print(f"sq      {n} lines: median {med * 1e3:7.2f} ms, best {best * 1e3:7.2f} ms")
    try:
        import pyserq
    except ImportError:
        return
    best, med = best_and_median(lambda: pyserq.compile(source=src), args.repeat)
    print(f"pyserq  {n} lines: median {med * 1e3:7.2f} ms, best {best * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
