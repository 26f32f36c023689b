"""Throughput of sq's random streams next to pyserq's (python -m benchmarks.bench_random).

Two views: per-call cost from Python (dominated by call overhead on both sides),
and the C loop, through one `~erlang(k, 1)` draw with a large k, where every
phase is one uniform and one logarithm -- the cost the engine pays per draw.
"""
from __future__ import annotations

from sq.bench._child import least_cpu
from sq.engine._random import Rng, stream_seed

try:
    import pyserq
except ImportError:
    pyserq = None


def best_of(fn, repeat=5):
    """The least CPU time of `repeat` calls (the bench's measure: the machine may be shared)."""
    return least_cpu(fn, repeat)


def per_call(make, n=200_000):
    r = make(1)
    return best_of(lambda: [r.random_f64() for _ in range(n)]) / n * 1e9


def erlang_sq(k):
    r = Rng(stream_seed(3, "session"))
    return best_of(lambda: r.draw("erlang", k, 1.0), 3) / k * 1e9


def erlang_pyserq(k):
    src = f"workload {{ arrive batch(1); }}\nsession {{ observe v = ~erlang({k}, 1); }}"
    p = pyserq.compile(source=src, seed=3, horizon=1)
    return best_of(lambda: pyserq.run(p), 3) / k * 1e9


def main():
    k = 20_000_000
    print(f"random_f64 from Python:  sq {per_call(Rng):6.1f} ns/call", end="")
    print(f"   pyserq {per_call(pyserq.Rng):6.1f} ns/call" if pyserq else "")
    print(f"exponential phase in C:  sq {erlang_sq(k):6.2f} ns/draw", end="")
    print(f"   pyserq {erlang_pyserq(k):6.2f} ns/draw" if pyserq else "")


if __name__ == "__main__":
    main()
