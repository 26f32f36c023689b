"""Reading a trace: sq.read_trace against pandas.read_csv with date parsing, on the same file.

The file is synthetic, in the Azure LLM 2024 style (`TIMESTAMP,ContextTokens,GeneratedTokens`,
UTC offsets, timestamps with and without fractional seconds mixed), written to a temporary
folder and deleted after (never committed):

    python benchmarks/bench_traces.py [ROWS] [--gzip]

ROWS defaults to 3,000,000. Prints rows per second (CPU time) for each reader, pandas with `date_format="ISO8601"` and
`"mixed"`, and checks that both read the
same arrivals (pandas's nanosecond timestamps against sq's seconds, within 1 µs).
"""
from __future__ import annotations

import argparse
import sys
import os
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's sq
from sq.bench.rows import write_rows   # noqa: E402  (one writer of the Azure 2024 text)


def write_trace(path: str, rows: int, seed: int = 1, gz: bool = False) -> None:
    """`rows` requests over a day, token counts uniform (a reader's test: the shapes do not matter)."""
    rng = np.random.default_rng(seed)
    micros = np.sort(rng.integers(0, 86_400_000_000, rows))
    write_rows(path, micros, rng.integers(1, 8000, rows), rng.integers(1, 800, rows), rng, gz)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="?", type=int, default=3_000_000)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    import pandas as pd

    import sq
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "azure2024.csv" + (".gz" if args.gzip else ""))
        write_trace(path, args.rows, gz=args.gzip)
        size = os.path.getsize(path)
        # CPU time of this process: on a shared machine the wall clock measures the neighbours too
        t0 = time.process_time()
        records = sq.read_trace(path)
        t_sq = time.process_time() - t0
        t0 = time.process_time()
        frame = pd.read_csv(path, parse_dates=["TIMESTAMP"], date_format="ISO8601")
        t_pd = time.process_time() - t0
        t0 = time.process_time()
        pd.read_csv(path, parse_dates=["TIMESTAMP"], date_format="mixed")
        t_mixed = time.process_time() - t0
        stamps = frame["TIMESTAMP"]
        pandas_arrival = (stamps - stamps.iloc[0]).dt.total_seconds().to_numpy()
        assert len(records) == len(frame) == args.rows
        assert np.abs(records.arrival - pandas_arrival).max() < 1e-6
        assert np.array_equal(records.new, frame["ContextTokens"].to_numpy())
    print(f"{args.rows:,} rows, {size / 1e6:.0f} MB{' (gzip)' if args.gzip else ''}")
    print(f"sq.read_trace               {t_sq:7.2f} s  {args.rows / t_sq / 1e6:6.2f} M rows/s")
    for name, t in (("ISO8601", t_pd), ("mixed", t_mixed)):
        print(f"pandas.read_csv({name + ')':9s}    {t:7.2f} s  {args.rows / t / 1e6:6.2f} M rows/s  "
              f"(sq {t / t_sq:.1f}x faster)")


if __name__ == "__main__":
    main()
