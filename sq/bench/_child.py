"""One measurement, in a fresh process: `python _child.py SPEC` (SPEC: JSON) prints one JSON line.

Run by its path so that nothing but the implementation measured is loaded: the
reference child loads only its driver file, not sq. The times are CPU times of this process
(the machine may be shared): a run's time includes its report's JSON text, what
either implementation has computed once it has given that text (sq builds its
report's statistics on first read).
"""
import hashlib
import json
import resource
import sys
import time

# A tiny horizon: a run that does (almost) nothing but its per-run work, set-up and report.
PROBE_HORIZON = 1e-9


def implementation(impl: str):
    """(compile, run) of the implementation (\"sq\", \"sq-engine\", or the path of a reference driver such
    as benchmarks/reference_pyserq.py): run(program, seed) gives the report."""
    # (sq's face is sq.compile = compile_program and sq.run = sq.engine.run's: nothing inside sq imports the face)
    if impl == "sq":
        from sq.engine.run import run
        from sq.frontend.compile import compile_program

        return compile_program, lambda program, seed: run(program, seed=seed)
    if impl == "sq-engine":   # sq's engine alone on the lowered program, no report: what a C loop does
        from sq import _engine
        from sq.engine.run import lower_program
        from sq.frontend.compile import compile_program

        return compile_program, lambda program, seed: _engine.run(lower_program(program), seed=seed)
    # the reference: a file outside the package (sq never imports pyserq), loaded by its path
    import runpy

    return runpy.run_path(impl)["implementation"]()


def report_text(report) -> str:
    return report.json() if hasattr(report, "json") else ""


def least_cpu(work, times: int) -> float:
    best = float("inf")
    for _ in range(times):
        t0 = time.process_time()
        work()
        best = min(best, time.process_time() - t0)
    return best


def one_pass(run, program, runs: int):
    """The runs of seeds 1..runs, each report kept and its JSON text written: (cpu, of it the
    texts' cpu, reports, texts)."""
    reports, texts, reporting = [], [], 0.0
    t0 = time.process_time()
    for seed in range(1, runs + 1):
        report = run(program, seed)
        t1 = time.process_time()
        texts.append(report_text(report))
        reporting += time.process_time() - t1
        reports.append(report)
    return time.process_time() - t0, reporting, reports, texts


def main(spec: dict) -> dict:
    compile_, run = implementation(spec["impl"])
    arrivals = spec["arrivals"] or None
    program = compile_(source=spec["source"], horizon=spec["horizon"], warmup=spec["warmup"], seed=1,
                       arrivals=arrivals)
    probe = compile_(source=spec["source"], horizon=PROBE_HORIZON, warmup=0.0, seed=1)
    # the probe runs first: what the first run of a process loads lazily stays out of the timing
    fixed = least_cpu(lambda: report_text(run(probe, 1)), 3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # A round lasts at least spec["round"] seconds of CPU: a pass over the runs shorter than that is
    # made again (the same seeds, the same work, each pass's reports kept as the first's were)
    # and the round's figure is the mean of its passes. A pass of ~0.1 s (the sweep in sq) is at
    # the mercy of a shared VM's moments: its least over a few rounds moved 0.098-0.144 s from one
    # bench to the next. Averaged over a second it is timed over as long a stretch as the other
    # implementation's one pass of ~1 s, by the same rule for both: not the least of many short
    # passes, which would favour the quicker implementation by picking its luckiest moment.
    passes, cpu, reporting, first, varied = 0, 0.0, 0.0, None, False
    while True:
        took, texts_took, reports, texts = one_pass(run, program, spec["runs"])
        passes, cpu, reporting = passes + 1, cpu + took, reporting + texts_took
        digests = [hashlib.sha256(t.encode()).hexdigest()[:16] for t in texts]
        if first is None:
            first = digests       # every later pass must give the first pass's reports
        varied |= digests != first
        if cpu >= spec["round"]:
            break
        del reports, texts      # (the next pass holds its own reports alone, as the first did)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cpu": cpu / passes, "fixed": fixed, "report": reporting / passes, "passes": passes,
            "events": sum(r.events for r in reports), "digests": None if varied else first,
            "peak_kib": after, "grew_kib": after - before}


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    sys.path[0] = spec["path"]   # the sq the parent runs, not this file's folder
    print(json.dumps(main(spec)))
