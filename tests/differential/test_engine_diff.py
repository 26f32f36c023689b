"""The engine against pyserq 0.1.2, run on pyserq's own IR.

Every program below is compiled by pyserq, run by pyserq and by our engine
(on `lower(ir)`), and every raw observable is compared: observation samples,
times, sessions and turns; the top-level counters; gauge change points; and
then the whole report JSON, field by field (1e-9 relative); the estimators' reports, as JSON text.
"""
from __future__ import annotations

import json
import math

import pytest

from tests.helpers.oracle import same_json
from sq.lower.lowering import lower
from sq.results.report import Report

pyserq = pytest.importorskip("pyserq")
_engine = pytest.importorskip("sq._engine")

REL = 1e-9

MM1 = """
stage svc : fifo;
workload { arrive poisson(0.8); }
session { set t0 = now; run svc (~exp(1)); observe resp = now - t0; observe big = now - t0 > 3; }
gauge q = queue(svc);
"""

TANDEM = """
stage a : fifo(2); stage b : ps(1); stage c : delay;
workload { arrive poisson(1.5); }
session { set t0 = now; run a (~exp(1)); observe wa = now - t0; run b (~uniform(0.1, 0.9));
          run c (~erlang(3, 2)); observe resp = now - t0; }
gauge na = queue(a); gauge nb = queue(b) + busy(a);
"""

PROGRAMS = {
    # arrivals ----------------------------------------------------------------
    "mm1": (MM1, dict(horizon=2000, warmup=200, seed=5)),
    "mm1-seed2": (MM1, dict(horizon=1500, seed=2)),
    "mm1-seed3-warm": (MM1, dict(horizon=1000, warmup=999.5, seed=3)),
    "mmc": ("""stage s : fifo(3); workload { arrive poisson(2.5); }
              session { set t = now; run s (~exp(1)); observe r = now - t; }
              gauge busy3 = busy(s);""", dict(horizon=800, seed=11)),
    "renewal-h2": ("""stage s : fifo; workload { arrive renewal(~h2(1.2, 4)); }
              session { set t = now; run s (~exp(1)); observe r = now - t; }""",
                   dict(horizon=1000, seed=7)),
    "renewal-const": ("""stage d : delay; workload { arrive renewal(0.7); }
              session { observe t = now; run d (2); }""", dict(horizon=50)),
    "renewal-expr": ("""stage d : fifo; let g = 2; workload { arrive renewal(max(g, ~uniform(1, 3))); }
              session { run d (~exp(1.5)); observe t = now; }""", dict(horizon=300, seed=4)),
    "batch": ("""stage s : fifo; workload { arrive batch(20); }
              session { run s (~exp(1)); observe t = now; }""", dict(horizon=100, seed=9)),
    "batch-frac": ("""stage s : delay; workload { arrive batch(2.7); }
              session { run s (serial + 1); observe t = now; }""", dict(horizon=10)),
    "closed": ("""stage s : fifo; stage think : delay; workload { arrive closed(5); }
              session { set t = now; run s (~exp(1)); observe r = now - t; run think (~exp(3)); }""",
               dict(horizon=500, seed=3)),
    "closed-loop": ("""stage s : ps(1); stage z : delay; workload { arrive closed(4); }
              session { loop { set t = now; run s (~exp(0.5)); observe r = now - t; run z (~exp(2));
                        branch (turn_no >= 3) { end; } turn; } }""", dict(horizon=300, seed=8)),
    "arrivals-limit": ("""stage s : fifo; workload { arrive poisson(1); }
              session { run s (~exp(0.5)); observe t = now; }""",
                       dict(horizon=1000, arrivals=50, seed=3)),
    "arrivals-limit-renewal": ("""stage d : delay; workload { arrive renewal(1); init { observe a = now; } }
              session { run d (2); }""", dict(horizon=100, arrivals=10, warmup=1)),
    "none": ("""stage s : fifo; gauge g = queue(s); session { observe x = 1; }""", dict(horizon=10)),
    "no-session": ("""workload { arrive poisson(1); }""", dict(horizon=20, seed=2)),
    # stages -------------------------------------------------------------------
    "ps-phi-present": ("""stage p : ps(min(present, 2)); workload { arrive poisson(1.6); }
              session { set t = now; run p (~exp(1)); observe r = now - t; }""",
                       dict(horizon=1000, seed=12)),
    "ps-phi-draw": ("""stage p : ps(~uniform(1, 2)); workload { arrive poisson(1); }
              session { set t = now; run p (~exp(1)); observe r = now - t; }""",
                    dict(horizon=400, seed=13)),
    "ps-phi-now": ("""stage p : ps(1 + now / 100); workload { arrive poisson(1); }
              session { set t = now; run p (~exp(1)); observe r = now - t; }""",
                   dict(horizon=300, seed=14)),
    "ps-zero": ("""stage p : ps(0); workload { arrive batch(2); }
              session { run p (1); observe never = 1; }""", dict(horizon=10)),
    "ps-attr-nan": ("""stage p : ps(x == x ? 1 : 3); workload { arrive batch(1); init { set x = 5; } }
              session { run p (2); observe t = now; }""", dict(horizon=10)),
    "delay-many": ("""stage d : delay; workload { arrive poisson(5); }
              session { run d (~exp(3)); observe t = now; }
              gauge n = queue(d);""", dict(horizon=200, seed=21)),
    "tandem": (TANDEM, dict(horizon=1000, warmup=100, seed=17)),
    "array-choose": ("""stage s[3] : fifo; workload { arrive poisson(2.4); }
              session { set t = now; choose j in 3 by (queue(s[j]), j); run s[j] (~exp(1));
                        observe r = now - t; observe pick = j; }
              gauge q0 = queue(s[0]); gauge q2 = queue(s[2]);""", dict(horizon=500, seed=31)),
    "array-random": ("""stage s[2] : ps(1); workload { arrive poisson(1.5); }
              session { set j = ~uniform(0, 2); run s[j] (~exp(1)); observe t = now; observe jj = floor(j); }""",
                     dict(horizon=400, seed=32)),
    "work-busy": ("""stage f : fifo; stage p : ps(2); stage d : delay; workload { arrive poisson(1); }
              session { observe w = work(f) + work(p) + work(d); observe b = busy(f) + busy(p) + busy(d);
                        branch with (0.5) { run f (~exp(0.8)); } else { run p (~exp(1)); } run d (1); }""",
                  dict(horizon=300, seed=33)),
    "estimators": ("""stage f : fifo; workload { arrive poisson(0.7); }
              session { observe l = est_lambda(f); observe r = est_rho(f); observe w = est_wait(f);
                        observe p = price(f, 1, 2); run f (~exp(1)); }
              gauge gl = est_lambda(f); gauge gr = est_rho(f);""", dict(horizon=500, seed=34)),
    "zero-work": ("""stage s : fifo; workload { arrive batch(3); }
              session { observe o = 10*serial + 1; run s (0); observe o = 10*serial + 2;
                        run s (serial - 1); observe o = 10*serial + 3; }""", dict(horizon=10)),
    "inf-work": ("""stage s : fifo; workload { arrive batch(2); }
              session { run s (1/0); observe never = 1; }""", dict(horizon=10)),
    "nan-work": ("""stage s : ps(1); workload { arrive batch(2); }
              session { run s (0/0); observe t = now; }""", dict(horizon=10)),
    # statements ----------------------------------------------------------------
    "branch-with": ("""stage d : delay; workload { arrive poisson(3); }
              session { branch with (0.3) { observe hit = 1; run d (1); } else { observe miss = 1; }
                        observe done = now; }""", dict(horizon=200, seed=41)),
    "branch-nested": ("""stage a : fifo; stage b : delay; workload { arrive poisson(1); init { set c = ~uniform(0, 3); } }
              session { branch (c < 1) { run a (1); } else { branch (c < 2) { run b (2); } else { run a (0.5); run b (0.5); } }
                        observe t = now; observe cc = c; }""", dict(horizon=200, seed=42)),
    "loop-end": ("""stage d : delay; workload { arrive batch(3); }
              session { set k = 0; loop { set k = k + 1; run d (~exp(1)); observe k_at = k;
                        branch (k == 3 + serial) { end; } } }""", dict(horizon=100, seed=43)),
    "choose-keys": ("""workload { arrive batch(4); }
              session { choose j in 3 by (j == 1 ? 0 : 5); observe a = j;
                        choose m in 3 by (-m); observe c = m; choose q in 2.7 by (-q); observe d = q;
                        choose w in 0 by (w); observe g = w; choose u in 4 by (u == 0 || u == 2 ? 0 : 1, -u);
                        observe h = u; choose r in 5 by (~uniform(0, 1)); observe rr = r; }""",
                    dict(horizon=10, seed=44)),
    "choose-nan": ("""workload { arrive batch(2); }
              session { choose j in 3 by (0/0); observe a = j; choose k in 3 by (k == 0 ? 0/0 : 1);
                        observe b = k; choose m in 3 by (m == 1 ? 0/0 : 1, -m); observe c = m; }""",
                   dict(horizon=10)),
    "turn-blocks": ("""stage d : delay;
              workload { arrive batch(2); init { set a = serial * 10 + ~exp(1); } turn { set b = a + turn_no + ~uniform(0, 1); } }
              session { observe s0 = a; turn; observe s1 = b; run d (1); turn; observe s2 = b; }""",
                    dict(horizon=100, seed=45)),
    "turn-warmup": ("""stage d : delay; workload { arrive poisson(1); }
              session { loop { turn; run d (~exp(1)); observe tn = turn_no; branch (turn_no >= 3) { end; } } }""",
                    dict(horizon=200, warmup=50, seed=46)),
    "set-builtins": ("""workload { arrive batch(2); }
              session { set serial = 5 + serial; set turn_no = 9.7; observe a = 1; set turn_no = -3; observe b = 2;
                        set turn_no = 1e30; observe c = 3; set turn_no = 0/0; observe d = 4; turn; observe e = 5; }""",
                     dict(horizon=10)),
    "server-splice": ("""stage d : delay;
              workload { arrive batch(2); session { set t0 = now; request; observe rt = now - t0; request; observe rt2 = now - t0; } }
              server { run d (2); observe srv = now; }""", dict(horizon=100)),
    "expressions": ("""workload { arrive batch(3); }
              session { set x = serial - 1;
                observe a = -2^2 + 2^3^2 + x^2; observe b = 1 + 1 == 2; observe c = 0 || 0 && 1;
                observe d = x ? 2 : 3; observe e = (0/0) ? 1 : 2; observe f = min(0/0, x) + max(x, 0/0);
                observe g = 1/x; observe h = abs(x) + floor(x / 3) + ceil(x / 3) + sqrt(x) + exp(x) + ln(x);
                observe i = !x + (x != x) + (x <= 0) + (x >= 0) + (x < 0) + (x > 0) + pow(2, x);
                observe j = 0 && ~exp(1); observe k = 1 || ~exp(1); observe l = 1 ? 1 : ~exp(1);
                observe m = ~exp(1); observe n = sum q in 3 (q * x) + min q in 2 (q - x) + max q in 2 (q + x); }""",
                    dict(horizon=10, seed=1)),
    "distributions": ("""workload { arrive batch(200); init { set w = ~h2(2, 4); } }
              session { observe e = ~exp(2); observe u = ~uniform(3, 1); observe k = ~erlang(2.5, 2);
                        observe z = ~erlang(0, 2); observe h = ~h2(2, 0.5); observe b = ~bernoulli(0.25);
                        observe dd = ~det(3); observe ww = w; observe ex0 = ~exp(0) + ~exp(-1); }""",
                      dict(horizon=10, seed=51)),
    "nonfinite-observe": ("""workload { arrive batch(45); }
              session { observe i = 1/0; observe n = 0/0; observe m = serial == 3 ? 0/0 : serial; }""",
                          dict(horizon=10)),
    "pool-functions": ("""pool kv { cap 10; } stage s : fifo; workload { arrive batch(2); }
              session { observe u = used(kv) + free(kv) + holders(kv) + queued(kv) + cachedin(kv); run s (1); }
              gauge g = free(kv) - used(kv);""", dict(horizon=10)),
    # pools --------------------------------------------------------------------
    "pool-queue": ("""pool kv { cap 10; } stage d : delay; workload { arrive batch(3); }
              session { hold kv (6) { observe u = used(kv); observe q = queued(kv); run d (1); } observe t = now; }""",
                   dict(horizon=100)),
    "pool-reserve": ("""pool kv { cap 10; } stage d : delay; workload { arrive batch(3); }
              session { hold kv (2) reserve (8) { observe u = used(kv); run d (1); } observe t = now; }""",
                     dict(horizon=100)),
    "pool-cache-block": ("""pool kv { cap 100; block 10; } workload { arrive batch(1); }
              session { hold kv (35) { } cache (35); observe ci = cachedin(kv);
                        hold kv (50) { observe c1 = cached; observe u1 = used(kv); } cache (0);
                        observe ci2 = cachedin(kv); }""", dict(horizon=100)),
    "pool-end-in-hold": ("""pool kv { cap 100; } stage d : delay; workload { arrive batch(2); }
              session { hold kv (60) { run d (1); end; } observe never = 1; }""", dict(horizon=100)),
    "pool-mm2": ("""pool kv { cap 3; } stage s : fifo(2); workload { arrive poisson(1.5); }
              session { set t = now; hold kv (1) { observe w = now - t; run s (~exp(1)); } cache (1);
                        observe r = now - t; }
              gauge g = used(kv) + queued(kv) + holders(kv);""", dict(horizon=500, seed=3, warmup=20)),
    "pool-queue-by": ("""pool kv { cap 1; queue by (-prio, waited); } stage d : delay;
              workload { arrive poisson(2); init { set prio = ~uniform(0, 3); } }
              session { hold kv (1) { observe a = prio; run d (~exp(0.4)); } }""", dict(horizon=200, seed=6)),
    "pool-release-drop": ("""pool kv { cap 10; } stage d : delay; workload { arrive batch(3); }
              session { hold kv (6) { run d (1); release kv; observe u = used(kv); run d (1); } cache (5);
                        observe c = cachedin(kv); drop kv; observe c2 = cachedin(kv); }""", dict(horizon=100)),
    "pool-evict-lru": ("""pool mem { cap 40; block 4; } stage d : delay; workload { arrive poisson(1); }
              session { hold mem (~uniform(5, 15)) { observe hit = cached; run d (~exp(2)); } cache (12);
                        observe c = cachedin(mem); }
              gauge cached_g = free(mem);""", dict(horizon=300, seed=7)),
    "pool-two-nested": ("""pool A { cap 10; } pool B { cap 8; } stage d : delay; workload { arrive poisson(1.2); }
              session { hold A (~uniform(1, 4)), B (2) reserve (3) { observe h = holders(A) + holders(B);
                          hold A (1) { run d (~exp(1)); } observe u = used(A); run d (0.5); } }""",
                        dict(horizon=200, seed=8)),
    "pool-array-draws": ("""pool kv[2] { cap 5; } stage d : delay; workload { arrive poisson(2); }
              session { choose j in 2 by (queued(kv[j]) + used(kv[j]), j);
                        hold kv[j] (~uniform(1, 4) + 0 * ~exp(1)) { run d (~exp(1)); } cache (2);
                        observe c = cachedin(kv[j]); }""", dict(horizon=200, seed=5)),
    "pool-reject": ("""pool kv { cap 10; block 4; } workload { arrive batch(3); }
              session { hold kv (9 - serial) { observe in = 1; } observe t = now; }""", dict(horizon=10)),
    "pool-grow-load": ("""pool kv { cap 100; block 16; } stage d : delay; workload { arrive batch(1); }
              session { hold kv (17) { observe a = used(kv); grow kv (1); observe b = used(kv); load kv (40); } cache (40);
                        observe c = cachedin(kv); drop kv; observe e = cachedin(kv);
                        hold kv (10) { release kv; observe f = used(kv); run d (1); } }""", dict(horizon=100)),
    "pool-grow-wait": ("""pool mem { cap 10; } stage d : delay; workload { arrive batch(3); }
              session { hold mem (2) { run d (1 + serial / 10); grow mem (5 - serial); observe g = now; run d (3); } }""",
                       dict(horizon=100)),
    "pool-grow-random": ("""pool mem { cap 12; block 2; } stage d : delay; workload { arrive poisson(1); }
              session { hold mem (~uniform(1, 4)) { run d (~exp(1)); grow mem (~uniform(0, 5)); observe u = used(mem);
                        load mem (1); run d (~exp(1)); } cache (5); }""", dict(horizon=300, seed=12)),
    "pool-lease": ("""pool kv { cap 10; } stage d : delay; workload { arrive batch(1); }
              session { hold kv (10) { load kv (10); } cache (10) lease kv (5); observe u = used(kv); run d (1);
                        observe u1 = used(kv); release kv; observe u2 = used(kv); observe c = cachedin(kv); }""",
                   dict(horizon=100)),
    "pool-lease-timers": ("""pool kv { cap 12; } stage d : delay; workload { arrive poisson(1); }
              session { hold kv (~uniform(1, 5)) { run d (~exp(1)); } cache (3) lease kv (~exp(2));
                        observe u = used(kv); run d (~exp(1)); observe c = cachedin(kv); }""",
                          dict(horizon=300, seed=4, warmup=10)),
    "pool-lease-nan": ("""pool kv { cap 10; } stage d : delay; workload { arrive batch(2); }
              session { hold kv (5) { } lease kv (0/0); observe u = used(kv); run d (1); observe u1 = used(kv);
                        hold kv (4) { } lease kv (inf); }""", dict(horizon=100)),
    "pool-reuse": ("""pool kv { cap 100; block 16; } stage d : delay; workload { arrive batch(2); }
              session { hold kv (50) { run d (1); } cache (100); observe c1 = cachedin(kv);
                        hold kv (10) reuse (20) { observe hit = cached; run d (1); } cache (0);
                        observe c2 = cachedin(kv); hold kv (95) { observe u = used(kv); } }""", dict(horizon=100)),
    "pool-evict-by": ("""pool mem { cap 30; block 2; evict by (waiting, -size, tag, age); } pool gate { cap 2; } stage d : delay;
              workload { arrive poisson(1.5); init { set tag = ~uniform(0, 3); } }
              session { hold gate (1) { hold mem (~uniform(2, 9)) { observe hit = cached; run d (~exp(1)); } cache (8); }
                        set tag = tag + 1; observe c = cachedin(mem); run d (~exp(1));
                        hold mem (4) reuse (2) { observe h2 = cached; } cache (3); }""", dict(horizon=200, seed=13)),
    "pool-spill": ("""pool mem { cap 30; block 4; spill disk via wire (size / 100) when (size >= 4 && floor(serial / 2) * 2 == serial); }
              pool disk { cap 40; evict by (-size); } stage wire : fifo; stage d : delay; workload { arrive poisson(1); }
              session { hold mem (~uniform(4, 16)) { observe hit = cached; run d (~exp(1)); } cache (12);
                        observe cd = cachedin(disk); branch (cachedin(disk) > 0) { run wire (cachedin(disk) / 100); drop disk; } }""",
                   dict(horizon=200, seed=14)),
    "flows-maxmin": ("""stage a : ps(1); stage b : ps(3); stage c[2] : ps(2); share maxmin; workload { arrive poisson(1.5); }
              session { set t = now; branch with (0.4) { run a, b (~exp(1)); } else { branch with (0.5) { run b, c[1] (~exp(1)); }
                        else { run c[0] (~exp(0.7)); } } observe r = now - t; observe w = work(b) + queue(a) + busy(c[1]); }
              gauge gb = queue(b);""", dict(horizon=300, warmup=10, seed=15)),
    "flows-bottleneck": ("""stage a : ps(2); stage b : ps(1); share bottleneck; workload { arrive poisson(1); }
              session { set t = now; branch with (0.5) { run a, b (~exp(1)); } else { run a (~exp(1)); } observe r = now - t; }""",
                         dict(horizon=300, seed=16)),
    # step stages --------------------------------------------------------------
    "step-vllm": ("""pool kv { cap 2000; block 16; admit via eng; }
              stage eng : step { budget 256; chunk 128; cost 0.01 + 0.0001 * tokens + 0.00001 * kv_decode; memory kv; }
              workload { arrive poisson(3); init { set n = floor(~uniform(50, 400)); set o = floor(~uniform(5, 60)); } }
              session { set t0 = now; hold kv (n) { run eng prefill (n) growing kv; observe ttft = now - t0;
                        run eng decode (o) growing kv; } cache (n + o); observe e2e = now - t0; }
              gauge used_kv = used(kv); gauge waiting = queued(kv);""", dict(horizon=60, warmup=5, seed=3)),
    "step-settle-admit": ("""pool kv { cap 600; block 16; } stage eng : step { budget 64; cost 0.02 + tokens / 4000; memory kv; }
              workload { arrive poisson(4); init { set n = floor(~uniform(20, 120)); } }
              session { set t0 = now; hold kv (n + 20) { run eng prefill (n) growing kv; observe ttft = now - t0;
                        run eng decode (20) growing kv; } observe e2e = now - t0; }""", dict(horizon=40, seed=4)),
    "step-serve-by": ("""pool kv { cap 500; admit via eng; } stage eng : step { budget 32; chunk 16; cost 0.05; memory kv;
                        serve by (remaining, -admission); }
              workload { arrive poisson(2); init { set n = floor(~uniform(8, 64)); } }
              session { hold kv (n + 8) { run eng prefill (n) growing kv; run eng decode (8) growing kv; } observe t = now; }""",
                      dict(horizon=40, seed=5)),
    "step-exclusive": ("""pool kv { cap 400; admit via eng; } stage eng : step { budget 48; chunk 32; cost 0.03 + tokens / 2000;
                        memory kv; serve exclusive prefill; }
              workload { arrive poisson(2); init { set n = floor(~uniform(8, 90)); } }
              session { hold kv (min(n, room)) reserve (n) at admission (room = budget_left(eng)) {
                          run eng prefill (n) growing kv; run eng decode (6) growing kv; } cache (100);
                        observe t = now; observe k = cachedin(kv); }""", dict(horizon=40, seed=6)),
    "step-decode-first": ("""stage eng : step { budget 8; cost ~uniform(0.05, 0.15); serve decode first; }
              workload { arrive closed(6); }
              session { loop { turn; run eng prefill (~uniform(1, 20)); observe tt = now; run eng decode (4); branch (turn_no >= 3) { end; } } }""",
                          dict(horizon=30, seed=7)),
    "step-stall": ("""pool kv { cap 60; } stage eng : step { budget 100; cost 1; memory kv; }
              workload { arrive batch(3); }
              session { hold kv (20) { run eng prefill (16) growing kv; run eng decode (10) growing kv;
                        observe u = used(kv); } cache (100); observe ext = cachedin(kv); }""", dict(horizon=100)),
    "step-lifo": ("""pool kv { cap 400; block 16; preempt lifo; admit via eng; }
              stage eng : step { budget 128; chunk 64; cost 0.02 + tokens / 5000; memory kv; }
              workload { arrive poisson(3); init { set n = floor(~uniform(20, 150)); set o = floor(~uniform(5, 40)); } }
              session { set t0 = now; hold kv (n) reserve (n + 16) { observe comp = computed;
                          run eng prefill (n) growing kv; observe ttft = now - t0;
                          run eng decode (o) growing kv; } cache (n + o); observe e2e = now - t0; }""",
                  dict(horizon=40, warmup=2, seed=9)),
    "pool-lifo-grow": ("""pool kv { cap 10; preempt lifo; } stage d : delay; stage f : fifo; workload { arrive poisson(1.5); }
              session { hold kv (3) { observe c = computed; run f (~exp(0.5)); grow kv (~uniform(0, 5)); observe u = used(kv);
                        run d (~exp(1)); } cache (4); }""", dict(horizon=200, seed=10)),
    # warm-up and horizon ------------------------------------------------------
    "warmup-batch": ("""stage s : fifo; workload { arrive batch(5); }
              session { observe a = now; run s (1); observe t = now; }
              gauge q = queue(s);""", dict(horizon=10, warmup=2.5)),
    "warmup-late": ("""stage s : fifo; workload { arrive poisson(1); }
              session { run s (~exp(0.5)); observe t = now; }""", dict(horizon=50, warmup=49.9, seed=2)),
    "horizon-cut": ("""stage s : fifo; workload { arrive batch(5); }
              session { run s (1); observe t = now; }""", dict(horizon=3)),
    "horizon-at-arrival": ("""stage s : fifo; workload { arrive renewal(1); }
              session { observe a = now; run s (0.5); observe t = now; }""", dict(horizon=3)),
    "gauge-many": ("""stage a : fifo; stage b : ps(2); workload { arrive poisson(2); }
              session { run a (~exp(0.4)); run b (~exp(1)); }
              gauge qa = queue(a); gauge qb = queue(b); gauge both = queue(a) + 2 * queue(b); gauge c = 5;""",
                   dict(horizon=300, warmup=30, seed=61)),
    # idle rows are skipped by settle and the area samples: pools and stages that go idle and
    # busy again (a rare branch, a pool held now and then), others never used, one only queued
    "idle-rows": ("""pool never[3] { cap 1; } pool sometimes { cap 1; } pool tight { cap 1; }
              stage quiet[3] : fifo(1); stage rare : fifo(1); stage s : fifo(2); stage p : ps(1);
              workload { arrive poisson(1.2); }
              session { set t0 = now; run s (~exp(1));
                        branch with (0.05) { run rare (~exp(2)); }
                        branch with (0.1) { hold sometimes (1) { run p (~exp(0.5)); } }
                        branch with (0.3) { hold tight (1) { run s (~exp(0.3)); } }
                        observe r = now - t0; }
              gauge q = queue(rare);""", dict(horizon=3000, warmup=300, seed=8)),
    # more rows than one summary word of the idle-row sets covers (4096): the busy ones come last
    "idle-rows-many": ("""pool never[5000] { cap 1; } stage quiet[5000] : fifo(1);
              pool sometimes { cap 1; } stage s : fifo(1);
              workload { arrive poisson(0.8); }
              session { set t0 = now; branch with (0.5) { hold sometimes (1) { run s (~exp(1)); } }
                        else { run s (~exp(1)); } observe r = now - t0; }""", dict(horizon=200, seed=3)),
}


def _close(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


def _same_list(a, b) -> bool:
    a, b = [float(x) for x in a], [float(x) for x in b]
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))


def _json_equal(ref, ours, path="") -> list[str]:
    """Field-by-field comparison of two parsed report JSONs (floats 1e-9 relative)."""
    if isinstance(ref, dict):
        if not isinstance(ours, dict) or list(ref) != list(ours):
            return [f"{path}: keys {list(ref)} vs {list(ours) if isinstance(ours, dict) else ours}"]
        return [d for k in ref for d in _json_equal(ref[k], ours[k], f"{path}.{k}")]
    if isinstance(ref, list):
        if not isinstance(ours, list) or len(ref) != len(ours):
            return [f"{path}: length differs"]
        return [d for i, (x, y) in enumerate(zip(ref, ours)) for d in _json_equal(x, y, f"{path}[{i}]")]
    if isinstance(ref, (int, float)) and isinstance(ours, (int, float)) \
            and not isinstance(ref, bool):
        return [] if _close(float(ref), float(ours)) else [f"{path}: {ref} vs {ours}"]
    return [] if ref == ours else [f"{path}: {ref!r} vs {ours!r}"]


def run_both(source: str, overrides: dict):
    program = pyserq.compile(source=source, **overrides)
    reference = pyserq.run(program)
    raw = _engine.run(lower(json.loads(program.to_json())))
    return reference, raw


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_raw_observables_match_pyserq(name):
    source, overrides = PROGRAMS[name]
    ref, raw = run_both(source, overrides)
    for field in ("events", "arrivals", "ended", "turns"):
        assert getattr(raw, field) == getattr(ref, field), field
    assert _close(raw.end, ref.end)
    assert [o.name for o in raw.observes] == list(ref.observes)
    for o in raw.observes:
        r = ref.observes[o.name]
        assert _same_list(o.samples, r.samples), f"{o.name} samples"
        assert _same_list(o.times, r.times), f"{o.name} times"
        assert list(o.sessions) == list(r.sessions), f"{o.name} sessions"
        assert list(o.turns) == list(r.turns), f"{o.name} turns"
    assert [g.name for g in raw.gauges] == list(ref.gauges)
    for g in raw.gauges:
        r = ref.gauges[g.name]
        assert _same_list(g.times, r.times), f"gauge {g.name} times"
        assert _same_list(g.values, r.values), f"gauge {g.name} values"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_json_matches_pyserq(name):
    source, overrides = PROGRAMS[name]
    ref, raw = run_both(source, overrides)
    ours = json.loads(Report.from_results(raw).to_json())
    diffs = _json_equal(json.loads(ref.json()), ours)
    assert not diffs, diffs[:10]


# Each stage kind's estimators, read by observes before and after the stage's run, by price and by gauges;
# ps(...) also reads its own estimator in its rate.
ESTIMATED_STAGES = ("fifo(1)", "fifo(2)", "ps(1)", "ps(0.5 + est_rho(s))", "delay")


@pytest.mark.parametrize("seed", (1, 3, 8))
@pytest.mark.parametrize("kind", ESTIMATED_STAGES)
def test_estimators_are_pyserqs_json_text(kind, seed):
    # bit for bit, not within REL: the averages' order of operations shows only in the last bits
    reads = "observe l = est_lambda(s); observe r = est_rho(s); observe w = est_wait(s); observe p = price(s, 1, 2);"
    report = same_json(f"""stage s : {kind}; run {{ horizon 300; seed {seed}; }}
        workload {{ arrive poisson(0.9); }}
        session {{ {reads} run s (~exp(1)); {reads} }}
        gauge gl = est_lambda(s); gauge gr = est_rho(s); gauge gw = est_wait(s);""")
    assert report["observes"]["l"]["count"] > 400     # enough completions for the averages to drift


def test_corpus_is_large_enough():
    assert len(PROGRAMS) >= 40


def test_runs_in_threads_give_the_sequential_results():
    # the loop releases the GIL and keeps all its state in its own C structs
    from concurrent.futures import ThreadPoolExecutor

    source, overrides = PROGRAMS["tandem"]
    low = lower(json.loads(pyserq.compile(source=source, **overrides).to_json()))
    alone = [Report.from_results(_engine.run(low, seed=s)).to_json() for s in (1, 2, 3, 4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda s: Report.from_results(_engine.run(low, seed=s)).to_json(), (1, 2, 3, 4)))
    assert together == alone
    assert len(set(alone)) == 4     # the seed reaches the streams
