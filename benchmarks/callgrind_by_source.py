"""Callgrind's instruction counts of sq's engine per .pyx/.pxi function, inlined code included.

gcc inlines most of the engine into a few C functions (run_loop, settle_passes, ...), so
callgrind's per-function table says little. This reads `callgrind_annotate --auto=yes`'s
per-line counts of the generated C file and charges each line to the Cython source line it came
from (Cython writes `/* "sq/_step.pxi":120` above the C of each statement), then to the `cdef`
function that line is in:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*run_loop*' \\
        --callgrind-out-file=cg.out python SCRIPT
    python benchmarks/callgrind_by_source.py cg.out [--per N] [--top 40]

`--per N` divides by N (events, iterations, sessions) to give instructions per that unit;
`--event Bcm` counts mispredicted branches instead (a run with `--branch-sim=yes`: callgrind's
own simple predictor, which knows no branch history, so a branch whose outcome an earlier one
already told is counted too; read it as where the coin tosses are, not as the CPU's count).
Time samples the same way (perf's software clock; a VM has no hardware counters):

    perf record -e cpu-clock -F 5000 -o perf.data python SCRIPT
    perf report -i perf.data --stdio --sort srcline --dsos _engine.cpython-311-x86_64-linux-gnu.so > lines.txt
    python benchmarks/callgrind_by_source.py --perf lines.txt

`--lines` charges to each Cython source line instead of its function (where in a function).
The C file (`--c-file`, default this checkout's sq/_engine.c) must be the one the counted build
compiled: a checkout built again since gives another file, whose lines the counts no longer fit.
The script stops when more than 1 % of the counts fall on lines of it that hold no C.
"""
from __future__ import annotations

import argparse
import bisect
import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = re.compile(r'/\* "([^"]+)":(\d+)')
DEF = re.compile(r"^\s*(?:cdef|cpdef|def)\s[^=#(]*?(\w+)\s*\(")   # (not a variable: no = before the name)


def origins(c_file: Path) -> tuple[list[int], list[tuple[str, int]]]:
    """The C lines where a Cython source location starts, and those locations."""
    starts, where = [], []
    for number, line in enumerate(c_file.read_text(errors="replace").splitlines(), start=1):
        m = ORIGIN.search(line)
        if m:
            starts.append(number)
            where.append((m.group(1), int(m.group(2))))
    return starts, where


def functions(source: Path) -> tuple[list[int], list[str]]:
    """The lines where each def/cdef of a Cython file starts, and their names."""
    lines, names = [], []
    if source.exists():
        for number, line in enumerate(source.read_text().splitlines(), start=1):
            m = DEF.match(line)
            if m and not line.lstrip().startswith("cdef class"):
                lines.append(number)
                names.append(m.group(1))
    return lines, names


def counts(out: Path, c_file: Path, event: str = "Ir") -> dict[int, int]:
    """Counts of one event (Ir: instructions; Bcm: mispredicted conditional branches, from
    `--branch-sim=yes`) per line of the generated C file."""
    # one event shown: with several columns a call's inclusive line ("N N N => f") would not be
    # told from a line's own cost
    text = subprocess.run(["callgrind_annotate", f"--show={event}", "--auto=yes", "--show-percs=no", str(out),
                           str(c_file)], capture_output=True, text=True, check=True).stdout
    per_line, line = {}, None
    in_file = False
    for row in text.splitlines():
        if row.startswith(("-- Auto-annotated source:", "-- User-annotated source:")):
            in_file = Path(row.split(":", 1)[1].strip()).name == c_file.name
            line = None
            continue
        if row.startswith("The following files") or "events annotated" in row:
            in_file = False     # past the listings: the totals after them are not a line's
            continue
        if not in_file:
            continue
        m = re.match(r"^-- line (\d+) -+$", row)
        if m:
            line = int(m.group(1))
            continue
        if line is None or "=>" in row:    # (a call's inclusive cost)
            continue
        m = re.match(r"^\s*([\d,]+|\.)\s", row)
        if m:
            if m.group(1) != ".":
                per_line[line] = per_line.get(line, 0) + int(m.group(1).replace(",", ""))
            line += 1
    return per_line


def uncoded_share(per_line: dict[int, float], c_file: Path) -> float:
    """The share of the counts that fall on lines of c_file holding no C (blank, a comment, a
    preprocessor line). The compiler charges instructions only to lines of code, so with the C
    file the build compiled this is ~0; a C file generated again since (another commit, another
    tree) shifts every line, and most counts land on comments or between functions (the
    fifteenth round's week read larr_push 38 and fail_as 18 an event that way: 73 % here)."""
    text = c_file.read_text(errors="replace").splitlines()
    uncoded = sum(n for line, n in per_line.items()
                  if line > len(text) or not text[line - 1].strip()
                  or text[line - 1].lstrip().startswith(("/*", "*", "//", "#")))
    return uncoded / max(sum(per_line.values()), 1)


def perf_counts(lines: Path, c_file: Path) -> dict[int, float]:
    """Samples (percent) per line of the generated C file, from perf report's srcline listing."""
    per_line: dict[int, float] = {}
    for row in lines.read_text().splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+(\S+):(\d+)\s*$", row)
        if m and Path(m.group(2)).name == c_file.name:
            per_line[int(m.group(3))] = per_line.get(int(m.group(3)), 0.0) + float(m.group(1))
    return per_line


def per_source(per_line: dict[int, float], c_file: Path):
    """(Cython file, its line, count) for each counted line of the generated C file; the file is
    None for a line before the first the C file attributes to a source line (its preamble)."""
    starts, where = origins(c_file)
    for line, n in per_line.items():
        i = bisect.bisect_right(starts, line) - 1
        yield (*where[i], n) if i >= 0 else (None, 0, n)


def by_source_line(per_line: dict[int, float], c_file: Path) -> Counter:
    """The counts per Cython source line (`file:line  text`): which statement of a function, and
    which of an inlined helper's lines (`before`'s one line serves every comparison it is inlined at)."""
    texts: dict[str, list[str]] = {}
    total: Counter = Counter()
    for file, src_line, n in per_source(per_line, c_file):
        if file is None:
            total["(C preamble)"] += n
            continue
        if file not in texts:
            texts[file] = (ROOT / file).read_text().splitlines() if (ROOT / file).exists() else []
        text = texts[file][src_line - 1].strip()[:70] if src_line <= len(texts[file]) else ""
        total[f"{file}:{src_line}  {text}"] += n
    return total


def by_function(per_line: dict[int, float], c_file: Path) -> Counter:
    defs: dict[str, tuple[list[int], list[str]]] = {}
    total: Counter = Counter()
    for file, src_line, n in per_source(per_line, c_file):
        if file is None:
            total["(C preamble)"] += n
            continue
        if file not in defs:
            defs[file] = functions(ROOT / file)
        lines, names = defs[file]
        j = bisect.bisect_right(lines, src_line) - 1
        total[f"{file}:{names[j] if j >= 0 else '?'}"] += n
    return total


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, nargs="?", help="callgrind's output file")
    ap.add_argument("--perf", type=Path, help="perf report --sort srcline's listing, instead of callgrind's")
    ap.add_argument("--c-file", type=Path, default=ROOT / "sq" / "_engine.c")
    ap.add_argument("--event", default="Ir", help="callgrind's event counted (Ir; Bcm with --branch-sim=yes)")
    ap.add_argument("--per", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--lines", action="store_true", help="per Cython source line, not per function")
    a = ap.parse_args()
    c_file = a.c_file.resolve()
    per_line = perf_counts(a.perf, c_file) if a.perf else counts(a.out, c_file, a.event)
    share = uncoded_share(per_line, c_file)
    if share > 0.01:
        raise SystemExit(f"{100 * share:.0f} % of the counts fall on lines of {c_file} that hold no C: "
                         "it is not the C file the counted build compiled (generated again since?); "
                         "give that one with --c-file")
    total = (by_source_line if a.lines else by_function)(per_line, c_file)
    whole = sum(total.values())
    print(f"{whole / a.per:12.2f}  all (per {a.per:g})")
    for name, n in total.most_common(a.top):
        print(f"{n / a.per:12.2f}  {100 * n / whole:5.1f} %  {name}")
