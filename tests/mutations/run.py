"""Mutation check of the differential samples: does each deliberate change of order in the engine
make them fail?

Each mutation below edits the engine's source the way a plausible speed-up could (an order of
same-instant work changed, a tie broken the other way). For each one the script copies the tree
(tracked files and the built extensions) into a temporary folder, applies the edit there, rebuilds,
and runs the default differential sample (tests/differential/test_random_programs.py as the default run selects
it, and the fast paths' files FAST_PATHS names) and then the larger one (`-m exact`), each stopping at its first failure. A mutation a sample
fails on is killed by it. Your worktree and its build are never touched.

What a mutation costs (measured in benchmarks/README.md, "Issue 27, seventh round: the mutation
check"): the rebuild compiles only the extensions whose sources the edit (or a stale build of the
worktree) makes newer than their built files, without debug information (-g0: gcc's code is the
same, only the .o's debug sections go); and the sample first runs the test that killed the
mutation last time (KILLERS): a failure there is a failure of the sample, so the verdict is the
one the whole sample gives; where it passes (or is gone), the whole sample runs.

    python tests/mutations/run.py                       # every mutation, both samples
    python tests/mutations/run.py --only events-lifo-at-a-tie --default-only
    python tests/mutations/run.py --baseline            # the unmutated copy first (must pass)

Files are found by name under sq/ (wherever the layout puts them); a mutation whose text is not
found exactly once fails loudly, so the list is kept in step with the engine.
"""
from __future__ import annotations

import argparse
import os
import re
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
    Mutation("deferred-areas-summed", "a row's deferred time-average samples are added as one product "
             "(value x the summed gaps) instead of one addition per sample, in order (each of the "
             "catch-up's kernels: two areas, four, one, and the four's AVX copy)", (
                 ("_loop.pxi", "        #pragma GCC unroll 8\n        for (; i < n; i++)\n"
                               "            s = _mm_add_pd(s, _mm_mul_pd(v, _mm_loadu_pd(gap2 + 2 * i)));\n",
                  "        __m128d sum = _mm_setzero_pd();\n        for (; i < n; i++)\n"
                  "            sum = _mm_add_pd(sum, _mm_loadu_pd(gap2 + 2 * i));\n"
                  "        s = _mm_add_pd(s, _mm_mul_pd(v, sum));\n"),
                 ("_loop.pxi", "            s = _mm_add_pd(s, _mm_mul_pd(v, d));\n"
                               "            t = _mm_add_pd(t, _mm_mul_pd(w, d));\n        }\n",
                  "            sum = _mm_add_pd(sum, d);\n        }\n"
                  "        s = _mm_add_pd(s, _mm_mul_pd(v, sum));\n        t = _mm_add_pd(t, _mm_mul_pd(w, sum));\n"),
                 ("_loop.pxi", "        __m128d t = _mm_set_pd(*e, *c), w = _mm_set_pd(ve, vc);\n",
                  "        __m128d t = _mm_set_pd(*e, *c), w = _mm_set_pd(ve, vc), sum = _mm_setzero_pd();\n"),
                 ("_loop.pxi", "            x = _mm_add_sd(x, p);\n            x = _mm_add_sd(x, _mm_unpackhi_pd(p, p));\n",
                  "            x = _mm_add_sd(x, _mm_mul_sd(v, _mm_add_sd(_mm_loadu_pd(g), _mm_unpackhi_pd(_mm_loadu_pd(g), _mm_loadu_pd(g)))));\n"),
                 ("_loop.pxi", "        #pragma GCC unroll 8\n        for (; i < n; i++)\n"
                               "            s = _mm256_add_pd(s, _mm256_mul_pd(v, _mm256_broadcast_sd(gap2 + 2 * i)));\n",
                  "        __m256d sum = _mm256_setzero_pd();\n        for (; i < n; i++)\n"
                  "            sum = _mm256_add_pd(sum, _mm256_broadcast_sd(gap2 + 2 * i));\n"
                  "        s = _mm256_add_pd(s, _mm256_mul_pd(v, sum));\n"),
             )),
    Mutation("lag-one-pair-summed", "a lone area's catch-up (sq_lag_one, a seqs pool's used) adds the "
             "two gaps' products of a load to each other first, then to the integral", (
                 ("_loop.pxi", "            x = _mm_add_sd(x, p);\n            x = _mm_add_sd(x, _mm_unpackhi_pd(p, p));\n",
                  "            x = _mm_add_sd(x, _mm_add_sd(p, _mm_unpackhi_pd(p, p)));\n"),
             )),
    Mutation("lag-four-avx-lanes-swapped", "the AVX copy of the four-area catch-up (sq_lag_four_vex: "
             "a KV pool's used, cached, queue and holders in one register) loads cached's integral in "
             "queue's lane and queue's in cached's", (
                 ("_loop.pxi", "__m256d s = _mm256_set_pd(*e, *c, *b, *a)", "__m256d s = _mm256_set_pd(*e, *b, *c, *a)"),
             )),
    Mutation("lag-four-sse2-gap-skipped", "the SSE2 four-area catch-up (sq_lag_four_lanes, the path "
             "of a processor without AVX) skips each catch-up's first gap (killed only where the "
             "tests run the SSE2 path on an AVX machine too: test_replicas' sse2_lanes)", (
                 ("_loop.pxi", "        #pragma GCC unroll 8\n        for (; i < n; i++) {\n"
                               "            d = _mm_loadu_pd(gap2 + 2 * i);\n",
                  "        #pragma GCC unroll 8\n        for (i++; i < n; i++) {\n"
                  "            d = _mm_loadu_pd(gap2 + 2 * i);\n"),
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
    Mutation("fifo-loop-finish-on-top", "in fifo_loop's own events (sq/engine/_one_queue.pxi, a heap or "
             "sorted) a finish that begins the next service leaves that service's finish on top, not "
             "moved to its place (right for one server, not for more)", (
                 ("_one_queue.pxi", "        heap_down(q.ends, 0, q.nends, e)\n", "        q.ends[0] = e\n"),
                 ("_one_queue.pxi", "        fifo_insert(q.ends, q.nends, e)\n", "        q.ends[q.nends] = e\n"),
             )),
    Mutation("fifo-loop-sorted-push-over-top", "fifo_loop's sorted events (2 to 8 servers, "
             "sq/engine/_one_queue.pxi) take a new event in the earliest one's place, not one above it", (
                 ("_one_queue.pxi", "fifo_insert(q.ends, q.nends + 1, e)", "fifo_insert(q.ends, q.nends, e)"),
             )),
    Mutation("fifo-loop-gap-ahead-of-any-kind", "fifo_loop draws the next arrival's gap ahead as a poisson "
             "one whatever the arrivals' kind (a renewal's gaps are drawn on the same stream)", (
                 ("_one_queue.pxi", "cdef bint gap_ahead = st.arrival_kind == A_POISSON\n",
                  "cdef bint gap_ahead = True\n"),
             )),
    Mutation("fifo-loop-work-ahead-of-any-shape", "fifo_loop draws an `~exp(m)` work ahead also where the "
             "work is another draw (on the same session stream, so every draw after it moves by one)", (
                 ("_one_queue.pxi", "cdef double work = sq_draw_exp(&st.rng_session, &exp_mean) if exp_work else 0.0\n",
                  "cdef double work = sq_draw_exp(&st.rng_session, &exp_mean)\n"),
             )),
    # (the arrival limit's end is tested only where it can hold: before a rare event or none in
    # fifo_loop, before an event of ps_loop's own list: queues12)
    Mutation("fifo-loop-limit-end-untested", "fifo_loop goes on past the arrival limit with nothing live "
             "(sq/engine/_one_queue.pxi): a warm-up's end pending then is handled, not left", (
                 ("_one_queue.pxi", "            if top.row < 0 and limit > 0 and st.arrivals >= limit and st.live == 0:\n"
                                    "                break\n", ""),
             )),
    Mutation("ps-loop-limit-end-untested", "ps_loop goes on past the arrival limit with nothing live "
             "(sq/engine/_one_ps.pxi): the stale finishes and the warm-up's end left are handled", (
                 ("_one_ps.pxi", "        if which == PS_OWN and limit > 0 and st.arrivals >= limit and st.live == 0:\n"
                                 "            break\n", ""),
             )),
    Mutation("queue-loops-arrival-at-the-limit", "fifo_loop and ps_loop schedule one arrival more than the "
             "limit's (the last arrival's test one off)", (
                 ("_one_queue.pxi", "INT64_MAX if limit == 0 else limit - 1", "INT64_MAX if limit == 0 else limit"),
                 ("_one_ps.pxi", "INT64_MAX if limit == 0 else limit - 1", "INT64_MAX if limit == 0 else limit"),
             )),
    # (an arrival's seq is taken in schedule_arrival alone, for st.arrival and the two loops' copies of it)
    Mutation("arrival-takes-no-seq", "an arrival is scheduled without taking a seq of its own: it shares "
             "the next scheduled event's, and a tie between them goes the other way", (
                 ("_arrays.pxi", "    slot.seq = st.seq\n    st.seq += 1\n", "    slot.seq = st.seq\n"),
             )),
    # (the empty arrival slot is written in no_arrival alone, for st.arrival and the two loops' copies
    # of it. No mutation of it is kept: its seq left as it was survives, an equivalent (an arrival
    # pending at t = inf ends a run past the horizon as none pending does, in next_event's callers and
    # in both loops); its time left as it was makes a phantom arrival that hangs the sample (sweep14))
    # (the horizon is tested only at a fresh instant's slow path: `until` is at most the horizon)
    Mutation("fifo-loop-horizon-past-until", "fifo_loop's `until` not bounded by the horizon "
             "(sq/engine/_one_queue.pxi): past the horizon, events go on while nothing else is due", (
                 ("_one_queue.pxi", "cdef double until = min(fifo_until(st), st.horizon)", "cdef double until = fifo_until(st)"),
                 ("_one_queue.pxi", "until = min(fifo_until(st), horizon)", "until = fifo_until(st)"),
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
    # (at a fresh instant its steps were just set to 0, so fifo_begins sets the count without reading
    # it; at a tie the count must be read and tested: the run's step bound, `run(step_limit=...)`,
    # is sq's own guard, so tests/engine/test_lone_queue.py holds the loops' errors to the general loop's)
    Mutation("fifo-loop-steps-unread-at-a-tie", "fifo_loop counts an event's step and its session's "
             "statements as at a fresh instant also at a tie (the instant's count set, not read): an "
             "instant of several events reaches the step bound later than the general loop's", (
                 ("_one_queue.pxi", "to_run, fresh and run_fits)", "to_run, run_fits)"),
                 ("_one_queue.pxi", "to_end, fresh and end_fits)", "to_end, end_fits)"),
             )),
    Mutation("ps-loop-steps-unread-at-a-tie", "ps_loop counts an event's step and its session's "
             "statements as at a fresh instant also at a tie (the instant's count set, not read)", (
                 ("_one_ps.pxi", "to_run, fresh and run_fits)", "to_run, run_fits)"),
                 ("_one_ps.pxi", "to_end, fresh and end_fits)", "to_end, end_fits)"),
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
             "its own event list (it changes no job, but pyserq handles it as an event)", (
                 ("_one_ps.pxi", """        heap_up(q.ends, q.n, cur[0])      # (its row 0: a stale finish)
        q.n += 1
""", ""),
             )),
    Mutation("ps-loop-own-list-unemptied", "ps_loop's own event list, emptied by a pop, keeps the popped "
             "event at its top instead of the empty one (t inf, seq NO_EVENT)", (
                 ("_one_ps.pxi", """    if q.n > 0:
        heap_down(q.ends, 0, q.n, q.ends[q.n])
    else:
        q.ends[0].t = INFINITY
        q.ends[0].seq = NO_EVENT
""", """    if q.n > 0:
        heap_down(q.ends, 0, q.n, q.ends[q.n])
"""),
             )),
    Mutation("ps-loop-stale-steps-unread-at-a-tie", "ps_loop counts a stale finish's step as at a fresh "
             "instant also at a tie (the instant's count set to 1, not read)", (
                 ("_one_ps.pxi", "k, 0, fresh and stale_fits)", "k, 0, stale_fits)"),
             )),
    Mutation("ps-loop-works-drawn-ahead-beside-a-draw", "ps_loop takes an h2 work's draws ahead also "
             "where φ draws on the session stream between them", (
                 ("_one_ps.pxi", "cdef bint works_drawn = h2_work and s.phi_fixed\n",
                  "cdef bint works_drawn = h2_work\n"),
             )),
    Mutation("ps-loop-gaps-drawn-ahead-of-any-kind", "ps_loop takes poisson gaps ahead whatever the "
             "arrivals' kind", (
                 ("_one_ps.pxi", "cdef bint gaps_drawn = st.arrival_kind == A_POISSON\n",
                  "cdef bint gaps_drawn = True\n"),
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
    Mutation("quiet-repeats-overrun", "a steady run, and step_again (one plan_unchanged), count one quiet "
             "repeat more per resident than its work allows (the last token planned as a whole one)", (
                 ("_step.pxi", "        x = st.jobs.rec[j].work - 1.0\n", "        x = st.jobs.rec[j].work\n"),
             )),
    Mutation("quiet-repeat-cost-unread", "a steady run makes its quiet repeats in one pass (keeping the "
             "duration) also where the cost does not repeat with the totals", (
                 ("_loop.pxi", "    return s.cost_repeats and not st.traces.iters",
                  "    return not st.traces.iters"),
             )),
    Mutation("quiet-after-grow-twice", "the quiet repeats after a plan's grow counted with that grow "
             "added twice to the allocation (repeats past the next block boundary without a grow)", (
                 ("_step.pxi", "                    alloc += need          #", "                    alloc += 2 * need      #"),
             )),
    Mutation("quiet-queue-unsampled", "a quiet repeat's step 5 leaves out the pool's queue area (no hold "
             "can join or leave the queue inside a steady run, but its integral still moves)", (
                 ("_loop.pxi", "        if p.queue_area.value != 0:\n            area_again(&p.queue_area, st.now)\n", ""),
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
    Mutation("replica-quiet-after-join", "step_again makes a quiet repeat (replica_quiet) though a resident "
             "joined since the plan that counted it (the plan no longer kept)", (
                 ("_loop.pxi", "    if s.plan_kept and s.quiet > 0 and e.c == s.iter_epoch",
                  "    if s.quiet > 0 and e.c == s.iter_epoch"),
             )),
    Mutation("replica-quiet-kv-stale", "step_again's quiet repeats (replica_quiet) take the KV sums kept "
             "from an earlier plan than the one that counted them (replica_begin not keeping its own)", (
                 ("_loop.pxi", "    kp.kvb = t.kvb\n    kp.kvm = t.kvm\n    kp.pool = pool if grants",
                  "    kp.pool = pool if grants"),
             )),
    Mutation("kept-room-unread", "step_again's quiet repeats counted with grants are made though another "
             "stage's grow or an admission took the pool's room since (kept_room not read)", (
                 ("_loop.pxi", "    return kp.pool < 0 or st.pools[kp.pool].used <= kp.used\n", "    return True\n"),
             )),
    Mutation("replica-quiet-grants-kv-kept", "a quiet repeat with grants whose grow was due keeps the KV sums "
             "of the plan before it (not made afresh)", (
                 ("_loop.pxi", "            kp.kvb = t.kvb\n            kp.kvm = t.kvm\n        kp.used", "        kp.used"),
             )),
    Mutation("kept-cost-any-cost", "step_again's quiet repeat that grew nothing keeps the last iteration's "
             "cost though the cost reads more than the totals (`now`)", (
                 ("_loop.pxi", "    if repeat == 0 and s.cost_repeats:\n", "    if repeat == 0:\n"),
             )),
    Mutation("kept-cost-after-grow", "step_again's quiet repeat keeps the last iteration's cost though its "
             "grow moved the KV sums the cost reads", (
                 ("_loop.pxi", "    if repeat == 0 and s.cost_repeats:\n", "    if repeat >= 0 and s.cost_repeats:\n"),
             )),
    Mutation("quiet-clear-pools-unread", "step_again's quiet repeat is made though a pool waits on growers "
             "or on a queue this stage admits (quiet_clear's shortcut not reading pools_waiting)", (
                 ("_loop.pxi", "        return rows_none(st.pools_waiting) or pools_clear(st, k)\n",
                  "        return True\n"),
             )),
    Mutation("quiet-clear-stages-unread", "step_again's quiet repeat is made though another stage is marked "
             "ready (quiet_clear's shortcut not reading steps_ready), so one with work is not started", (
                 ("_loop.pxi", "    if rows_within(st.steps_ready, k):\n",
                  "    if True:\n"),
             )),
    Mutation("begun-stage-unmarked-unbegun", "the stages pass takes a step stage it visited out of steps_ready "
             "though its plan began no iteration (stalled, or its admission refused), so no later pass visits it "
             "while it waits (only a begun stage is unmarked: its end marks it again)", (
                 ("_loop.pxi", "                    if st.steps_only and st.stages[k].inflight:\n",
                  "                    if st.steps_only:\n"),
             )),
    Mutation("repeat-begins-after-plan", "step_again's iteration planned afresh (replica_begin) begins as a "
             "quiet repeat (iteration_begins `repeat`): its kind, decodes and time shares left as the last "
             "iteration's", (
                 ("_loop.pxi", "s.budget_k, repeat >= 0)\n", "s.budget_k, True)\n"),
             )),
    Mutation("replica-quiet-grown-unsampled", "step_again's quiet repeat that grew samples as one that did "
             "not (sample_repeat without `grown`): the grown pool's areas are sampled an event late", (
                 ("_loop.pxi", "        sample_repeat(st, repeat)\n", "        sample_repeat(st, False)\n"),
             )),
    Mutation("replica-quiet-tokens-at-kept", "a plan (replica_begin) leaves the time of the residents' last "
             "tokens kept by an earlier quiet repeat, so the next repeat's gaps are all read from it", (
                 ("_loop.pxi", "    kp.tokens_at = NAN                  # (the last tokens' times: end_iteration's, not all one)\n", ""),
             )),
    Mutation("alike-gaps-multiplied", "a quiet repeat's alike ITL gaps added to the total as one product "
             "(gap x their number) rather than one at a time", (
                 ("_loop.pxi", "    while r < na:\n        total += gap\n        r += 1\n", "    total += gap * (na - r)\n"),
             )),
    Mutation("choose-last-key-skipped-always", "choose_best leaves out its last key whatever it is, so a last "
             "key that breaks ties (`by (load, -r)`) is not read", (
                 ("_session.pxi", "        if st.shapes[off] == XS_ATTR:\n            nkeys -= 1\n",
                  "        nkeys -= 1\n"),
             )),
    Mutation("choose-load-ties-later", "choose_best's one-key router load gives a tie to the later candidate", (
                 ("_session.pxi", "            if cand == 0 or v < least:\n", "            if cand == 0 or v <= least:\n"),
             )),
    Mutation("least-loaded-ties-later", "choose_best's router load indexed by the candidate (least_loaded) "
             "gives a tie to the later candidate", (
                 ("_session.pxi", "        if cand == 0 or load < lightest:\n", "        if cand == 0 or load <= lightest:\n"),
             )),
    Mutation("least-loaded-first-index-unread", "least_loaded is taken for a router load whose first pool is "
             "indexed by another attribute than the candidate (read as the candidate)", (
                 ("_session.pxi", "c[0 + XONE_ARG] == var and c[XP_ATTR2 + XONE_ARG] == var", "c[XP_ATTR2 + XONE_ARG] == var"),
             )),
    Mutation("least-loaded-second-index-unread", "least_loaded is taken for a router load whose second pool "
             "is indexed by another attribute than the candidate (read as the candidate)", (
                 ("_session.pxi", "c[0 + XONE_ARG] == var and c[XP_ATTR2 + XONE_ARG] == var", "c[0 + XONE_ARG] == var"),
             )),
    Mutation("least-loaded-past-count", "least_loaded is taken with more candidates than pools, so a "
             "candidate past the end reads another pool instead of failing", (
                 ("_session.pxi", "\n            and n <= c[XP_POOL1 + XREF_COUNT] and n <= c[XP_POOL2 + XREF_COUNT])", ")"),
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
    Mutation("quiet-positions-overrun", "a steady run's quiet repeats where the position and the "
             "allocation are in one binade counted with no margin: one repeat past the allocation, its grow not made", (
                 ("_step.pxi", "        return (pos >= 1.0 && alloc <= top) ? 1.0 : 2.0;",
                  "        return (pos >= 1.0 && alloc <= top) ? 0.0 : 2.0;"),
             )),
    Mutation("repeat-kv-totals-kept", "a steady run's repeated iteration keeps the KV totals (and its "
             "duration) of the one before though a grow moved an allocation", (
                 ("_step.pxi", "    if not same or (due and kv):\n", "    if not same:\n"),
             )),
    Mutation("quiet-kv-totals-kept", "a quiet repeat made in one pass keeps the KV totals (and its "
             "duration) of the one before though its grow moved an allocation", (
                 ("_step.pxi", "    if due and st.kv_iteration:\n", "    if False:\n"),
             )),
    Mutation("quiet-grows-unsampled", "a quiet repeat made in one pass with grows samples the pools as if "
             "none had moved", (
                 ("_step.pxi", "        sample_repeat(st, moved)\n    return duration", "        sample_repeat(st, False)\n    return duration"),
             )),
    Mutation("quiet-grow-skipped", "a quiet repeat made in one pass with grows moves the position without "
             "the grow due (each grow taken as not due)", (
                 ("_step.pxi", "                quiet_grow(st, j, fj, frame_pos[fj] + a.tok - st.sess.frame_alloc[fj])\n                due = True\n",
                  "                pass\n"),
             )),
    Mutation("repeat-pools-unsampled", "a steady run's repeated iteration defers the pools' areas though "
             "its grows moved one", (
                 ("_loop.pxi", "    if grown or st.n_pools == 1:\n", "    if st.n_pools == 1:\n"),
             )),
    Mutation("preempt-first-admitted", "growth preempts the resident admitted first, not last", (
                 ("_pools.pxi", "if slot >= 0 and (best < 0 or st.sess.adm[slot] > st.sess.adm[best]):",
                  "if slot >= 0 and (best < 0 or st.sess.adm[slot] < st.sess.adm[best]):"),
                 ("_pools.pxi", "    for r in range(s.nres - 1, -1, -1):\n        slot = st.jobs.rec[s.res[r]].owner",
                  "    for r in range(s.nres):\n        slot = st.jobs.rec[s.res[r]].owner"),
             )),
    Mutation("slab-refilled-per-run", "each run fills the slab its arrays are copied into from the start "
             "again (as if a slab were one run's scratch): kept reports' arrays are overwritten", (
                 ("_engine.pyx", "    cdef State* st = kept.st\n",
                  "    if _slab is not None:\n        _slab.used = 0\n    cdef State* st = kept.st\n"),
             )),
    Mutation("kept-state-not-cleared", "a thread's kept State is not cleared after a run (as if only the "
             "fields the set-up writes needed to be): the next run starts with the last one's clock and counts", (
                 ("_engine.pyx", "        memset(st, 0, sizeof(State))        # (every field as the set-up expects it: zero)\n",
                  ""),
             )),
    Mutation("plan-table-not-reset", "a set-up table kept from the thread's last run of the plan is "
             "taken as it was left (as if the next run wrote every field before reading it)", (
                 ("_arrays.pxi", "        if how != TABLE_RAW:\n            memset(pt.block[i], 0, bytes)\n", ""),
             )),
    Mutation("spare-layout-unchecked", "a family's kept block is taken whatever its layout (as if a "
             "family's tables were the same for every program): another program's tables overlap", (
                 ("_arrays.pxi", "        sp.same = sp.n == t.n and t.n <= SPARE_TABLES \\\n"
                  "            and memcmp(sp.sizes, t.sizes, <size_t> t.n * sizeof(size_t)) == 0\n",
                  "        sp.same = sp.n > 0\n"),
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
             "removed during the iteration (taken after a resident left)", (
                 ("_step.pxi", "    plain = s.na >= PLAIN_ENTRIES and warm and not left ",
                  "    plain = s.na >= PLAIN_ENTRIES and warm "),
             )),
    Mutation("end-decodes-gap-of-zero", "end_iteration takes end_decodes, which counts a gap equal to "
             "the histogram's last one, also before any positive gap is in it (the last gap 0, no last cell)", (
                 ("_step.pxi", "warm and not left and last_gap > 0.0\n", "warm and not left\n"),
             )),
    Mutation("top-kept-at-settle", "step_again settles an instant while the iteration end it took in "
             "place is still at the heap's top (heap_take_top left out before settle)", (
                 ("_loop.pxi", "    if top:\n        heap_take_top(st)\n    settle(st)\n", "    settle(st)\n"),
             )),
    Mutation("top-second-child-unread", "step_again, with the iteration end taken in place at the heap's "
             "top, asks whether another event is pending now of the top's first child only (the "
             "earliest below the top may be the second)", (
                 ("_arrays.pxi", " or (st.hlen > 2 and st.heap[2].t <= st.now)", ""),
             )),
    Mutation("sorted-events-newest-first-at-a-tie", "the short event list, kept sorted, puts an event "
             "before those scheduled earlier at its time (sq/engine/_arrays.pxi's events_insert)", (
                 ("_arrays.pxi", "    while i > 0 and before(&e, &h[i - 1]):\n        h[i] = h[i - 1]\n"
                                 "        i -= 1\n    h[i] = e\n    if st.hlen",
                  "    while i > 0 and e.t <= h[i - 1].t:\n        h[i] = h[i - 1]\n"
                  "        i -= 1\n    h[i] = e\n    if st.hlen"),
             )),
    Mutation("events-short-again-not-sorted", "the event list, a heap while long, is taken as sorted when "
             "short again without being sorted (events_take_top)", (
                 ("_arrays.pxi", "            events_sort(st)\n", "            st.heaped = False\n"),
             )),
    Mutation("placed-not-put-back", "plan_unchanged, placing a steady repeat's positions, leaves them "
             "moved where the plan changes after all (a grow refused, the budget spent)", (
                 ("_step.pxi", "            st.sess.frame_pos[st.jobs.rec[j].frame] = placed.old[r]\n", "            pass\n"),
             )),
    Mutation("placed-left-unvisited", "plan_again skips the entries plan_unchanged left unplaced (a grow "
             "due, a frame to mark): neither their grows nor their positions are made", (
                 ("_step.pxi", "        for i in range(placed.n):\n", "        for i in range(0):\n"),
             )),
    Mutation("again-positions-grow-unchecked", "again_positions moves a position past its allocation "
             "without the grow plan_again's own visit makes", (
                 ("_step.pxi", "            if grows and (pos - frame_alloc[fj] > EPS or not grown[fj]):\n",
                  "            if grows and not grown[fj]:\n"),
             )),
    Mutation("report-rows-past-the-middle", "the engine makes the report's rows itself also for a run that "
             "reached the middle of its measured window (no steady-state test: its warnings and growth lost)", (
                 ("_engine.pyx", "    if st.mid_taken or not st.keep_samples:\n        return reports.Report.from_results(",
                  "    if not st.keep_samples:\n        return reports.Report.from_results("),
             )),
    Mutation("warm-first-past-a-tie", "an observe's warm-up cut (Observe.of, which the engine's own report rows "
             "call too) drops the samples taken exactly at the warm-up (the first sample kept is the first after it)", (
                 ("report.py", 'first = int(times.searchsorted(warmup, side="left"))',
                  'first = int(times.searchsorted(warmup, side="right"))'),
             )),
    Mutation("select-top-skips-equal", "a short array's lone high rank (a short run's p99, select_top) "
             "skips a sample equal to the least kept without its key: +0 left out below a kept -0", (
                 ("_stats.pyx", "            if x < least:\n                continue\n",
                  "            if x <= least:\n                continue\n"),
             )),
    Mutation("select-top-four-below-any", "select_top leaves four samples out when any of them (not all) is "
             "below the least key kept", (
                 ("_stats.pyx", "return _mm_movemask_pd(m) == 3;", "return _mm_movemask_pd(m) != 0;"),
             )),
    Mutation("kept-lowered-after-set", "a Program keeps its lowered arrays when a field is set after a run "
             "(sq.run reads the kept arrays without lower_program: they must be the program's as it is)", (
                 ("ir.py", '        self.__dict__.pop("_derived", None)   # what was derived from the old value is stale\n',
                  "        pass\n"),
             )),
)

# The default sample: the generated programs, and the differential files of fast paths they
# rarely reach (test_steady_runs: gauges read and the window's middle taken while a steady run
# repeats; test_replicas: rows whose time averages are deferred while others move; test_fifo_loop:
# a lone fifo stage's own loop, which the random programs seldom take; test_ps_loop: a lone ps
# stage's, likewise; test_step_paths: the step engine's planning and ending shortcuts, the heavy
# row's preempting card among them; test_run_reuse: many kept runs of one compiled program, whose
# arrays share slabs; tests/engine/test_lone_queue.py: the lone loops against the general loop,
# also where the instant's step bound stops a run, which pyserq has not: it hangs there;
# test_report_rows: the report's rows the engine makes itself, a sweep's runs; and
# tests/engine/test_engine_results.py: those rows against Report.from_results, every field, also
# those beyond the JSON text).
FAST_PATHS = ["tests/differential/test_steady_runs.py", "tests/differential/test_replicas.py",
              "tests/differential/test_fifo_loop.py", "tests/differential/test_ps_loop.py",
              "tests/differential/test_step_paths.py", "tests/differential/test_run_reuse.py",
              "tests/differential/test_fast_forms.py", "tests/engine/test_lone_queue.py",
              "tests/differential/test_report_rows.py", "tests/engine/test_engine_results.py"]
SAMPLES = {
    "default": ["tests/differential/test_random_programs.py", *FAST_PATHS],
    "exact": ["tests/differential/test_random_programs.py", *FAST_PATHS, "-m", "exact"],
}

# The test of the default sample that killed each mutation in the last full run (`run.py` prints
# the ones that changed): run first, it settles most mutations in seconds.
KILLERS = {
    "kept-lowered-after-set":
        "tests/differential/test_run_reuse.py::test_a_program_changed_after_its_runs_runs_as_changed",
    "6531a92":
        "tests/differential/test_random_programs.py::test_coincidences_run_as_in_the_reference[100016]",
    "iteration-without-waiting":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[6]",
    "stages-before-pools":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[2]",
    "pools-pass-once":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[5]",
    "kept-room-unread":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "replica-quiet-grants-kv-kept":
        "tests/differential/test_replicas.py::test_the_weeks_engine_same_as_pyserq[R2-rate0.8]",
    "kept-cost-any-cost":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[a cost that reads the instant]",
    "kept-cost-after-grow":
        "tests/differential/test_replicas.py::test_the_weeks_engine_same_as_pyserq[R2-rate0.8]",
    "quiet-clear-pools-unread":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "quiet-clear-stages-unread":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "begun-stage-unmarked-unbegun":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "repeat-begins-after-plan":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "replica-quiet-tokens-at-kept":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "alike-gaps-multiplied":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[idle replicas]",
    "replica-quiet-grown-unsampled":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "deferred-areas-summed":
        "tests/differential/test_steady_runs.py::test_quiet_repeats_in_one_pass_give_pyserqs_json_text[cached chat]",
    "lag-one-pair-summed":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "lag-four-avx-lanes-swapped":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "lag-four-sse2-gap-skipped":
        "tests/differential/test_replicas.py::test_replicas_on_the_sse2_lanes_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "grow-untouched":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[1]",
    "events-lifo-at-a-tie":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[8]",
    "fifo-loop-serves-last-come":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[arrival_limit]",
    "fifo-loop-finish-on-top":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[arrival_limit]",
    "fifo-loop-sorted-push-over-top":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[arrival_limit]",
    "fifo-loop-gap-ahead-of-any-kind":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[renewal_gaps]",
    "fifo-loop-work-ahead-of-any-shape":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[h2_work]",
    "fifo-loop-limit-end-untested":
        "tests/engine/test_lone_queue.py::test_one_open_queue_takes_the_lone_loop_and_reports_as_the_general_loop[arrivals_before_warmup]",
    "ps-loop-limit-end-untested":
        "tests/engine/test_lone_queue.py::test_one_open_queue_takes_the_lone_loop_and_reports_as_the_general_loop[arrivals_before_warmup_ps]",
    "queue-loops-arrival-at-the-limit":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[arrival_limit]",
    "arrival-takes-no-seq":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[44]",
    "fifo-loop-horizon-past-until":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[mm1]",
    "fifo-loop-live-area-uncopied":
        "tests/differential/test_fifo_loop.py::test_fifo_loop_reports_pyserqs_json_text[arrival_limit]",
    "fifo-loop-live-area-stale-at-mid":
        "tests/differential/test_fifo_loop.py::test_the_window_middle_is_lone_loops[mm1]",
    "ps-loop-live-area-stale-at-mid":
        "tests/differential/test_ps_loop.py::test_the_window_middle_is_lone_loops[mg1_ps]",
    "fifo-loop-steps-unread-at-a-tie":
        "tests/engine/test_lone_queue.py::test_the_step_limit_stops_both_loops_at_the_same_step[fifo]",
    "ps-loop-steps-unread-at-a-tie":
        "tests/engine/test_lone_queue.py::test_the_step_limit_stops_both_loops_at_the_same_step[ps]",
    "ps-loop-stale-unsplit":
        "tests/differential/test_ps_loop.py::test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape[arrival_limit]",
    "ps-loop-superseded-dropped":
        "tests/differential/test_ps_loop.py::test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape[arrival_limit]",
    "ps-loop-own-list-unemptied":
        "tests/differential/test_ps_loop.py::test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape[arrival_limit]",
    "ps-loop-stale-steps-unread-at-a-tie":
        "tests/engine/test_lone_queue.py::test_the_step_limit_stops_both_loops_at_the_same_step[ps]",
    "ps-loop-works-drawn-ahead-beside-a-draw":
        "tests/differential/test_ps_loop.py::test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape[phi_draw_h2]",
    "ps-loop-gaps-drawn-ahead-of-any-kind":
        "tests/differential/test_ps_loop.py::test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape[horizon_mid_service]",
    "ps-lifo-at-a-tie":
        "tests/differential/test_random_programs.py::test_coincidences_run_as_in_the_reference[100009]",
    "admit-before-growers":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[35]",
    "queue-tie-last":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[53]",
    "steady-end-first-at-a-tie":
        "tests/differential/test_random_programs.py::test_coincidences_run_as_in_the_reference[100038]",
    "steady-instant-unread":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[gauges]",
    "steady-repeat-cost-reads-now":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[a linear cost reading now]",
    "quiet-repeats-overrun":
        "tests/differential/test_random_programs.py::test_coincidences_run_as_in_the_reference[100028]",
    "quiet-repeat-cost-unread":
        "tests/differential/test_steady_runs.py::test_steady_runs_on_and_off_give_one_report[costs reading now, the pool and the work]",
    "quiet-kv-totals-kept":
        "tests/differential/test_steady_runs.py::test_steady_runs_on_and_off_give_one_report[a linear cost of the decodes' KV]",
    "quiet-grows-unsampled":
        "tests/differential/test_steady_runs.py::test_steady_runs_on_and_off_give_one_report[grows granted near a full card, two pools, the KV in the cost]",
    "quiet-grow-skipped":
        "tests/differential/test_steady_runs.py::test_steady_runs_on_and_off_give_one_report[a linear cost of the decodes' KV]",
    "quiet-after-grow-twice":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[long decodes, a horizon mid-run]",
    "quiet-queue-unsampled":
        "tests/differential/test_steady_runs.py::test_steady_runs_on_and_off_give_one_report[holds waiting through quiet repeats]",
    "steady-admission-unread":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[light engine]",
    "step-again-admission-unread":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[least-loaded router, 16 busy replicas]",
    "step-again-other-stage-unread":
        "tests/differential/test_random_programs.py::test_coincidences_run_as_in_the_reference[100028]",
    "step-again-kept-after-leave":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "replica-quiet-after-join":
        "tests/differential/test_steady_runs.py::test_no_steady_runs_without_a_lone_step_stage[two step stages]",
    "pools-add-one-index":
        "tests/differential/test_fast_forms.py::test_a_router_load_of_two_indexed_pools_is_pyserqs_json_text",
    "replica-quiet-kv-stale":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[a cost that reads the instant and the KV sums]",
    "choose-last-key-skipped-always":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[idle replicas]",
    "least-loaded-ties-later":
        "tests/differential/test_fast_forms.py::test_choose_ties_go_where_the_keys_say",
    "least-loaded-first-index-unread":
        "tests/differential/test_fast_forms.py::test_choose_keys_of_each_form_are_pyserqs_json_text[load_z_r]",
    "least-loaded-second-index-unread":
        "tests/differential/test_fast_forms.py::test_choose_keys_of_each_form_are_pyserqs_json_text[load_r_z]",
    "least-loaded-past-count":
        "tests/differential/test_fast_forms.py::test_a_choose_past_its_pools_fails_as_on_the_stack_machine",
    "choose-load-ties-later":
        "tests/differential/test_fast_forms.py::test_choose_keys_of_each_form_are_pyserqs_json_text[load_r_z]",
    "quiet-positions-overrun":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[32]",
    "quiet-grants-blockless":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[preemption]",
    "repeat-kv-totals-kept":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[a linear cost of the decodes' KV]",
    "repeat-pools-unsampled":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[32]",
    "preempt-first-admitted":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[12]",
    "slab-refilled-per-run":
        "tests/differential/test_run_reuse.py::test_kept_runs_of_one_program_equal_fresh_compiles",
    "kept-state-not-cleared":
        "tests/differential/test_run_reuse.py::test_kept_runs_of_one_program_equal_fresh_compiles",
    "plan-table-not-reset":
        "tests/differential/test_run_reuse.py::test_a_longer_run_of_the_same_plan_then_short_ones_equal_fresh_runs",
    "spare-layout-unchecked":
        "tests/differential/test_run_reuse.py::test_two_programs_alternating_and_two_threads_at_once",
    "plan-decodes-grow-unchecked":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[1]",
    "plan-totals-after-preemption":
        "tests/differential/test_step_paths.py::test_token_totals_after_a_preemption_of_a_served_resident_are_the_final_assignments",
    "end-decodes-removed-read":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[two step stages, one preempting the other's residents]",
    "end-decodes-gap-of-zero":
        "tests/differential/test_step_paths.py::test_decode_tokens_with_gaps_of_zero_before_any_positive_gap_as_pyserq",
    "top-kept-at-settle":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[6]",
    "top-second-child-unread":
        "tests/differential/test_replicas.py::test_replicas_on_other_event_lists_same_as_pyserq[a heap-delays ending at an iteration's end, 3 replicas, seed 1]",
    "sorted-events-newest-first-at-a-tie":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[busy at the same instants]",
    "events-short-again-not-sorted":
        "tests/differential/test_replicas.py::test_replicas_same_as_pyserq[delays ending at an iteration's end, 8 replicas, seed 1]",
    "report-rows-past-the-middle":
        "tests/engine/test_engine_results.py::test_the_engines_report_is_the_report_of_its_raw_results[queues-{}-all]",
    "warm-first-past-a-tie":
        "tests/differential/test_report_rows.py::test_the_engines_rows_report_pyserqs_json_text[sample_at_the_warmup]",
    "select-top-skips-equal":
        "tests/differential/test_report_rows.py::test_the_engines_rows_report_pyserqs_json_text[signed_zeros_at_the_p99]",
    "select-top-four-below-any":
        "tests/differential/test_report_rows.py::test_the_engines_rows_report_pyserqs_json_text[sweep_mm1]",
    "again-positions-grow-unchecked":
        "tests/differential/test_random_programs.py::test_generated_program_runs_as_in_the_reference[12]",
    "placed-not-put-back":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[a cost with a draw]",
    "placed-left-unvisited":
        "tests/differential/test_steady_runs.py::test_steady_runs_give_pyserqs_report_and_iterations[arrival at an end, the arrival first]",
}


def copy_tree(dest: Path) -> None:
    """The tracked files and the built extensions (and their C files), times kept: the rebuild
    compares each extension's sources with its built file in place (build(): --build-lib .), so
    it compiles only what the mutation touched, and what the worktree had not rebuilt."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    names = [n for n in files.decode().split("\0") if n]
    names += [str(p.relative_to(ROOT)) for p in (ROOT / "sq").rglob("*") if p.suffix in (".so", ".c")]
    for name in names:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


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


def build(tree: Path) -> tuple[bool, list[str]]:
    """(built, the extensions compiled). Built into the tree itself (`--build-lib .`, what
    --inplace gives without its build folder in between), so an extension whose built file is
    newer than its sources is not compiled again; -g0 after Python's -g leaves the code as it is. Plain,
    not profile-guided (SQ_PGO=0): one pass, incremental, and a mutant's own code is what is tested."""
    env = environment(tree)
    env["CFLAGS"] = f"{env.get('CFLAGS', '')} -g0".strip()
    env["SQ_PGO"] = "0"
    r = subprocess.run(["nice", "-n", "10", sys.executable, "setup.py", "build_ext", "--build-lib", "."],
                       cwd=tree, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)
    return r.returncode == 0, [ln.split("'")[1] for ln in r.stdout.splitlines() if ln.startswith("building '")]


def pytest(tree: Path, args: list[str]) -> tuple[int, str]:
    """(pytest's exit code, the first failing test or the summary line)."""
    r = subprocess.run(["nice", "-n", "10", sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        *args], cwd=tree, env=environment(tree), capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    failed = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return r.returncode, (failed[0] if failed else (lines[-1] if lines else r.stderr[-300:]))


def failed_test(line: str) -> str:
    """The test a FAILED or ERROR line names (its parameters may hold spaces, not ' - ')."""
    m = re.match(r"(?:FAILED|ERROR) (\S+?(?:\[.*?\])?)(?: - |$)", line)
    return m.group(1) if m else ""


def sample_fails(tree: Path, sample: str, killer: str | None) -> tuple[bool, str]:
    """(failed, the first failing test or the summary line). The killer first, when the sample
    holds its file: its failure (or a crash, a collection error: any exit but passed, 4 (no such
    test) or 5 (none selected)) is the sample's; otherwise the whole sample runs."""
    args = SAMPLES[sample]
    options = args[args.index("-m"):] if "-m" in args else []
    if killer and killer.split("::")[0] in args:
        code, line = pytest(tree, [killer, *options])
        if code not in (0, 4, 5):
            return True, line
    code, line = pytest(tree, args)
    return code != 0, line


def check(mutation: Mutation | None, samples: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="sq-mutant-") as folder:
        tree = Path(folder)
        started = time.monotonic()
        copy_tree(tree)
        if mutation is not None:
            apply(tree, mutation)
        result = {"copy": f"{time.monotonic() - started:.1f} s"}
        started = time.monotonic()
        built, compiled = build(tree)
        if not built:
            return {"build": "failed"}
        result["build"] = f"{time.monotonic() - started:.0f} s ({', '.join(compiled) or 'nothing'})"
        for sample in samples:
            started = time.monotonic()
            failed, line = sample_fails(tree, sample, KILLERS.get(mutation.name) if mutation else None)
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
    killers = {name: failed_test(result["default"][2]) for name, result in table
               if name != "(unmutated)" and result.get("default", ("",))[0] == "killed"}
    changed = {name: test for name, test in killers.items() if test and KILLERS.get(name) != test}
    if changed:
        print("\nkilled by another test than KILLERS names (update it):")
        for name, test in changed.items():
            print(f"    {name!r}: {test!r},")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
