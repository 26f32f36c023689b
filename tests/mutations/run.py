"""Mutation check of the differential samples: does each deliberate change of order in the engine
make them fail?

Each mutation below edits the engine's source the way a plausible speed-up could (an order of
same-instant work changed, a tie broken the other way). For each one the script copies the tree
(tracked files and the built extensions) into a temporary folder, applies the edit there, rebuilds,
and runs the default differential sample (tests/differential/test_random_programs.py as the default run selects
it, and the fast paths' files FAST_PATHS names) and then the larger one (`-m exact`), each stopping at its first failure. A mutation a sample
fails on is killed by it. Your worktree and its build are never touched.

    python tests/mutations/run.py                       # every mutation, both samples
    python tests/mutations/run.py --only events-lifo-at-a-tie --default-only
    python tests/mutations/run.py --baseline            # the unmutated copy first (must pass)

Files are found by name under sq/ (wherever the layout puts them); a mutation whose text is not
found exactly once fails loudly, so the list is kept in step with the engine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    name: str
    why: str
    edits: tuple      # (file name under sq/, text, replacement), each text found exactly once


def _summed(branch: str, areas: str) -> tuple:
    """deferred-areas-summed's edit of one of lag_pool's loops (its areas by their sums' names):
    the gaps summed first, then each area's value times the sum."""
    loop = f"{branch}        for i in range(p.lag_at, g.n):\n"
    added = "".join(f"{{}}{a} += v{a} * d\n" for a in areas)
    return ("_loop.pxi", loop + "            d = g.gap[i]\n" + added.format(*["            "] * len(areas)),
            f"{branch}        d = 0.0\n        for i in range(p.lag_at, g.n):\n            d += g.gap[i]\n"
            + added.format(*["        "] * len(areas)))


MUTATIONS = (
    Mutation("6531a92", "the stages pass asks afresh at each step stage whether an event is pending "
             "now, after the ps stages before it rescheduled (commit 6531a92's change)", (
                 ("_loop.pxi", "                if pending < 0:\n                    pending = pending_now(st)\n"
                               "                if not pending:",
                  "                pending = pending_now(st)\n                if not pending:"),
                 ("_loop.pxi", "            if pending < 0 and k < st.n_step_end:\n                pending = pending_now(st)\n",
                  ""),
             )),
    Mutation("iteration-without-waiting", "an idle step stage plans its iteration before the other "
             "events of the instant are handled", (
                 ("_loop.pxi", "                if not pending:\n", "                if pending >= -1:\n"),
                 # (settle_step_passes: the stages pass of a lone step stage)
                 ("_loop.pxi", "step_has_work(st, k) and not pending_now(st):", "step_has_work(st, k):"),
             )),
    Mutation("stages-before-pools", "settle's stages pass runs before the pools pass", (
                 ("_loop.pxi", """    if pools_pass(st) < 0:
        return
    if st.n_ps_first < st.n_stages:
        settle_stages(st)
        if st.error.code:
            return
""", """    if st.n_ps_first < st.n_stages:
        settle_stages(st)
        if st.error.code:
            return
    if pools_pass(st) < 0:
        return
"""),
                 # (settle_step_passes: the stages pass of a lone step stage)
                 ("_loop.pxi", """    if pools_pass(st) < 0:
        return
    if not st.stages[k].inflight and step_has_work(st, k) and not pending_now(st):
        start_iteration(st, k)
        if st.error.code:
            return
""", """    if not st.stages[k].inflight and step_has_work(st, k) and not pending_now(st):
        start_iteration(st, k)
        if st.error.code:
            return
    if pools_pass(st) < 0:
        return
"""),
             )),
    Mutation("pools-pass-once", "the pools pass and the sessions it readies do not repeat until "
             "nothing is ready (one round of admission per settle)", (
                 ("_loop.pxi", "        if st.error.code or not rows_any(st.pools_waiting):\n            return\n",
                  "        return\n"),
             )),
    Mutation("deferred-areas-summed", "a pool's deferred time-average samples are added as one product "
             "(value x the summed gaps) instead of one addition per sample, in order", (
                 _summed("    if vc == 0.0 and vq == 0.0 and same_bits(vu, vh) and same_bits(u, h):\n", "u"),
                 _summed("    elif vc == 0.0 and vq == 0.0:\n", "uh"),
                 _summed("    elif vq == 0.0:\n", "uch"),
                 _summed("    else:\n", "ucqh"),
             )),
    # (a release's own touch is not a mutation worth holding: holders_remove touches the same pool
    # right after it, so dropping it changes nothing; a granted grow has no second touch)
    Mutation("grow-untouched", "a granted grow takes a pool's units without touching the pool, so "
             "its time averages go on being deferred at the old value", (
                 ("_pools.pxi", "        p.used += need\n        touch_pool(st, p)\n", "        p.used += need\n"),
             )),
    Mutation("events-lifo-at-a-tie", "events at one time are handled last scheduled first", (
                 ("_arrays.pxi", "return x.t < y.t or (x.t == y.t and x.seq < y.seq)",
                  "return x.t < y.t or (x.t == y.t and x.seq > y.seq)"),
                 ("_arrays.pxi", "return (x.t < y.t) | ((x.t == y.t) & (x.seq < y.seq))",     # before_flag
                  "return (x.t < y.t) | ((x.t == y.t) & (x.seq > y.seq))"),
             )),
    Mutation("fifo-loop-serves-last-come", "a lone fifo stage's freed server takes the job that joined the "
             "line last (fifo_loop's own waiting line, sq/engine/_one_queue.pxi)", (
                 ("_one_queue.pxi", "    cdef FifoJob job = q.line[q.head]\n    q.head = (q.head + 1) & (q.cap - 1)\n",
                  "    cdef FifoJob job = q.line[(q.head + q.n - 1) & (q.cap - 1)]\n"),
             )),
    Mutation("fifo-loop-finish-on-top", "in fifo_loop's own event heap (sq/engine/_one_queue.pxi) a finish that "
             "begins the next service leaves that service's finish on top, not sifted down to its place "
             "(right for one server, not for more)", (
                 ("_one_queue.pxi", "        heap_down(q.ends, 0, q.nends, e)\n", "        q.ends[0] = e\n"),
             )),
    Mutation("fifo-loop-live-area-uncopied", "fifo_loop samples only the stage's number area while the live "
             "sessions' is alike (sq/engine/_one_queue.pxi), and forgets to copy it into the live sessions' at the end", (
                 ("_one_queue.pxi", "        if alike:\n            st.live_area = s.number\n", ""),
             )),
    Mutation("fifo-loop-live-area-stale-at-mid", "fifo_loop's live sessions' area, kept in the stage's while "
             "alike, is not copied before instant_over (which takes the window's middle from it)", (
                 ("_one_queue.pxi", "                if alike:\n                    st.live_area = s.number     "
                                    "# (the window's middle reads it)\n", ""),
             )),
    Mutation("ps-loop-live-area-stale-at-mid", "ps_loop's live sessions' area, kept in the stage's while "
             "alike, is not copied before instant_over (which takes the window's middle from it)", (
                 ("_one_ps.pxi", "                if alike:\n                    st.live_area = s.number     "
                                 "# (the window's middle reads it)\n", ""),
             )),
    Mutation("ps-loop-stale-unsplit", "a lone ps stage's stale finish (ps_loop, sq/engine/_one_ps.pxi) leaves "
             "the time averages unsampled: one product over the span it would have split in two", (
                 ("_one_ps.pxi", """                area_set(&s.number, st.now, s.number.value)
                if not alike:
                    st.live_area = s.number     # (live sessions: as below)
                area_set(&s.busy_area, st.now, s.busy_area.value)
                continue
""", """                continue
"""),
             )),
    Mutation("ps-loop-superseded-dropped", "ps_loop drops a superseded finish instead of putting it on "
             "the event list (it changes no job, but pyserq handles it as an event)", (
                 ("_one_ps.pxi", """        if push_event(st, cur.t, EV_FINISH, cur.a, cur.b, cur.c) < 0:
            return -1
""", ""),
             )),
    Mutation("ps-lifo-at-a-tie", "ps jobs whose work ends at one virtual time leave the latest first", (
                 ("_arrays.pxi", "return x.tag < y.tag or (x.tag == y.tag and x.id < y.id)",
                  "return x.tag < y.tag or (x.tag == y.tag and x.id > y.id)"),
                 ("_arrays.pxi", "return (x.tag < y.tag) | ((x.tag == y.tag) & (x.id < y.id))",     # before_flag
                  "return (x.tag < y.tag) | ((x.tag == y.tag) & (x.id > y.id))"),
             )),
    Mutation("admit-before-growers", "a pool admits waiting holds before it retries its waiting growers", (
                 ("_pools.pxi", "            retry_growers(st, k)\n            try_admit(st, k)\n",
                  "            try_admit(st, k)\n            retry_growers(st, k)\n"),
             )),
    Mutation("queue-tie-last", "holds waiting with equal `queue by` keys: the one queued last goes first", (
                 ("_pools.pxi", "        if q == 0 or keys_smaller(&keys[n], keys, n):",
                  "        if q == 0 or not keys_smaller(keys, &keys[n], n):"),
             )),
    Mutation("steady-end-first-at-a-tie", "a steady run takes its iteration's end off the event list "
             "also when another event falls at the same time (that event, scheduled earlier, comes first)", (
                 ("_loop.pxi", "(nxt == NULL or nxt.t > end.t)", "(nxt == NULL or nxt.t >= end.t)"),
             )),
    Mutation("steady-instant-unread", "a steady run's repeated iteration ends skip the end of the instant "
             "before them (gauges not read, the window's middle not taken)", (
                 ("_loop.pxi", "        instant_over(st, &end)          # (no poll due: it does not stop the run)\n",
                  "        st.steps = 0\n"),
             )),
    Mutation("steady-repeat-cost-reads-now", "a steady run's iteration repeating the one before keeps its "
             "duration though its (linear) cost reads `now`", (
                 ("_step.pxi", "            s.cost_repeats = False      # `now`, or a context another moment sets\n",
                  "            pass\n"),
             )),
    Mutation("quiet-repeats-overrun", "a steady run counts one quiet repeat more per resident than its work "
             "allows (the last token planned as a whole one)", (
                 ("_step.pxi", "        x = st.jobs.work[j] - 1.0\n", "        x = st.jobs.work[j]\n"),
             )),
    Mutation("quiet-repeat-cost-unread", "a steady run makes its quiet repeats in one pass (keeping the "
             "duration) also where the cost does not repeat with the totals", (
                 ("_loop.pxi", "    return s.cost_repeats and not st.kv_iteration and not st.traces.iters",
                  "    return not st.kv_iteration and not st.traces.iters"),
             )),
    Mutation("quiet-after-grow-twice", "the quiet repeats after a plan's grow counted with that grow "
             "added twice to the allocation (repeats past the next block boundary without a grow)", (
                 ("_step.pxi", "                    alloc += need          #", "                    alloc += 2 * need      #"),
             )),
    Mutation("steady-admission-unread", "a steady run goes on while a hold waits for the stage's admission "
             "without testing that its head still does not fit (admission_refused)", (
                 ("_pools.pxi", "st.hold_pools_max + i]], need):\n            return True\n    return False\n",
                  "st.hold_pools_max + i]], need):\n            return True\n    return True\n"),
             )),
    Mutation("step-again-admission-unread", "an iteration end of one of several step stages begins the same "
             "plan again (step_again) while a hold waits for that stage's own admission", (
                 ("_loop.pxi", "(p.qlen > 0 and (st.admit_via[pk] < 0 or st.admit_via[pk] == k))",
                  "(p.qlen > 0 and st.admit_via[pk] < 0)"),
             )),
    Mutation("step-again-other-stage-unread", "step_again begins its stage's plan again while another step "
             "stage, held back by an event pending at the same instant, could start (the pass would start it first)", (
                 ("_loop.pxi", "            if not st.stages[j].inflight and step_has_work(st, j):\n                return False\n",
                  ""),
             )),
    Mutation("step-again-kept-after-leave", "a resident leaving (preempted) leaves its stage's plan kept, so "
             "step_again's next plan of it reads only what an iteration moves, or none in a quiet repeat", (
                 ("_step.pxi", "            s.nres -= 1\n            s.plan_kept = False\n", "            s.nres -= 1\n"),
             )),
    Mutation("replica-quiet-overrun", "step_again counts one quiet repeat more per resident than its work "
             "allows, so a resident's last token ends inside replica_quiet's pass, which finishes no one", (
                 ("_loop.pxi", "            x = w - 1.0\n", "            x = w\n"),
             )),
    Mutation("replica-quiet-after-join", "step_again makes a quiet repeat (replica_quiet) though a resident "
             "joined since the plan that counted it (the plan no longer kept)", (
                 ("_loop.pxi", "    if s.plan_kept and s.quiet > 0 and e.c == s.iter_epoch",
                  "    if s.quiet > 0 and e.c == s.iter_epoch"),
             )),
    Mutation("pools-add-one-index", "a router's load of two indexed pools (XS_POOLS_ADD) reads the second "
             "pool at the first one's index", (
                 ("_expr.pxi", "    k = member(st, attr_value(st, slot, c[XP_ATTR2 + XONE_ARG]), c[XP_POOL2 + XREF_COUNT], E_INDEX, slot)\n", ""),
             )),
    Mutation("quiet-grants-blockless", "a steady run's quiet repeats past block boundaries count the pool's "
             "room without a block of growth per resident, so a grow near the cap is taken as granted", (
                 ("_step.pxi", "                spare += alloc - pos - 2.0 - st.pools[row].block\n",
                  "                spare += alloc - pos - 2.0\n"),
             )),
    Mutation("repeat-kv-totals-kept", "a steady run's repeated iteration keeps the KV totals (and its "
             "duration) of the one before though a grow moved an allocation", (
                 ("_step.pxi", "    if not same or (due and kv):\n", "    if not same:\n"),
             )),
    Mutation("repeat-pools-unsampled", "a steady run's repeated iteration defers the pools' areas though "
             "its grows moved one", (
                 ("_loop.pxi", "    if grown or st.n_pools == 1:\n", "    if st.n_pools == 1:\n"),
             )),
    Mutation("preempt-first-admitted", "growth preempts the resident admitted first, not last", (
                 ("_pools.pxi", "if slot >= 0 and (best < 0 or st.sess.adm[slot] > st.sess.adm[best]):",
                  "if slot >= 0 and (best < 0 or st.sess.adm[slot] < st.sess.adm[best]):"),
                 ("_pools.pxi", "    for r in range(s.nres - 1, -1, -1):\n        slot = st.jobs.owner[s.res[r]]",
                  "    for r in range(s.nres):\n        slot = st.jobs.owner[s.res[r]]"),
             )),
    Mutation("slab-refilled-per-run", "each run fills the slab its arrays are copied into from the start "
             "again (as if a slab were one run's scratch): kept reports' arrays are overwritten", (
                 ("_engine.pyx", "    cdef State* st = <State*> calloc(1, sizeof(State))\n",
                  "    if _slab is not None:\n        _slab.used = 0\n    cdef State* st = <State*> calloc(1, sizeof(State))\n"),
             )),
    Mutation("plan-decodes-grow-unchecked", "plan_decodes plans a decode whose position passes its "
             "allocation (a grow due) without leaving it to plan_pass's visit, which grows", (
                 ("_step.pxi", "            if pos - frame_alloc[fj] > EPS:\n                break                   # a grow is due\n",
                  ""),
             )),
    Mutation("plan-totals-after-preemption", "start_iteration keeps plan_pass's token sums though a "
             "preemption dropped an entry they count", (
                 ("_step.pxi", "    if kv or st.iter_preempted or s.excl:\n", "    if kv or s.excl:\n"),
             )),
    Mutation("end-decodes-removed-read", "end_decodes applies the tokens of an entry whose job was "
             "removed during the iteration (its id not tested after a resident left)", (
                 ("_step.pxi", "        if (left and ids[j] != a.id) or mode[j] != M_DECODE or not decoding[j]:",
                  "        if mode[j] != M_DECODE or not decoding[j]:"),
             )),
)

# The default sample: the generated programs, and the differential files of fast paths they
# rarely reach (test_steady_runs: gauges read and the window's middle taken while a steady run
# repeats; test_replicas: rows whose time averages are deferred while others move; test_fifo_loop:
# a lone fifo stage's own loop, which the random programs seldom take; test_ps_loop: a lone ps
# stage's, likewise; test_step_paths: the step engine's planning and ending shortcuts, the heavy
# row's preempting card among them; test_run_reuse: many kept runs of one compiled program, whose
# arrays share slabs).
FAST_PATHS = ["tests/differential/test_steady_runs.py", "tests/differential/test_replicas.py",
              "tests/differential/test_fifo_loop.py", "tests/differential/test_ps_loop.py",
              "tests/differential/test_step_paths.py", "tests/differential/test_run_reuse.py",
              "tests/differential/test_fast_forms.py"]
SAMPLES = {
    "default": ["tests/differential/test_random_programs.py", *FAST_PATHS],
    "exact": ["tests/differential/test_random_programs.py", *FAST_PATHS, "-m", "exact"],
}


def copy_tree(dest: Path) -> None:
    """The tracked files, the built extensions and their build folder, times kept (so the rebuild
    compiles only what the mutation touched)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    names = [n for n in files.decode().split("\0") if n]
    names += [str(p.relative_to(ROOT)) for p in (ROOT / "sq").rglob("*") if p.suffix in (".so", ".c")]
    for name in names:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    if (ROOT / "build").is_dir():
        shutil.copytree(ROOT / "build", dest / "build", copy_function=shutil.copy2)


def apply(tree: Path, mutation: Mutation) -> None:
    for file_name, text, replacement in mutation.edits:
        found = [p for p in (tree / "sq").rglob(file_name)]
        if len(found) != 1:
            raise SystemExit(f"{mutation.name}: {len(found)} files named {file_name} under sq/")
        source = found[0].read_text()
        if source.count(text) != 1:
            raise SystemExit(f"{mutation.name}: the text to change is in {found[0].name} "
                             f"{source.count(text)} times, not once:\n{text}")
        found[0].write_text(source.replace(text, replacement))


def environment(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)      # the copy's sq, not an installed or the worktree's one
    return env


def build(tree: Path) -> bool:
    r = subprocess.run(["nice", "-n", "10", sys.executable, "setup.py", "build_ext", "--inplace"],
                       cwd=tree, env=environment(tree), capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)
    return r.returncode == 0


def sample_fails(tree: Path, sample: str) -> tuple[bool, str]:
    """(failed, the first failing test or the summary line)."""
    r = subprocess.run(["nice", "-n", "10", sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        *SAMPLES[sample]], cwd=tree, env=environment(tree), capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    failed = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return r.returncode != 0, (failed[0] if failed else (lines[-1] if lines else r.stderr[-300:]))


def check(mutation: Mutation | None, samples: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="sq-mutant-") as folder:
        tree = Path(folder)
        copy_tree(tree)
        if mutation is not None:
            apply(tree, mutation)
        started = time.monotonic()
        if not build(tree):
            return {"build": "failed"}
        result = {"build": f"{time.monotonic() - started:.0f} s"}
        for sample in samples:
            started = time.monotonic()
            failed, line = sample_fails(tree, sample)
            result[sample] = ("killed" if failed else "survived", f"{time.monotonic() - started:.0f} s", line)
        return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="a mutation's name (repeatable)")
    ap.add_argument("--default-only", action="store_true", help="run only the default sample")
    ap.add_argument("--baseline", action="store_true", help="check the unmutated copy first")
    ap.add_argument("--list", action="store_true", help="list the mutations and stop")
    args = ap.parse_args()
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name}: {m.why}")
        return 0
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    samples = ["default"] if args.default_only else ["default", "exact"]
    todo = ([None] if args.baseline else []) + chosen
    table = []
    for m in todo:
        name = "(unmutated)" if m is None else m.name
        result = check(m, samples)
        table.append((name, result))
        print(name, result, flush=True)
    print("\nmutation | " + " | ".join(samples))
    survivors = 0
    for name, result in table:
        cells = [result.get(s, (result["build"],))[0] for s in samples]
        print(f"{name} | " + " | ".join(cells))
        if name != "(unmutated)" and "survived" in cells[:1]:
            survivors += 1
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
