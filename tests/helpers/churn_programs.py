"""Programs that drive the engine's indexed structures hard (thousands of evictions, spills,
preemptions and re-admissions): run by tests/differential/test_engine_structures.py and, with the debug
traces on, by tests/differential/test_debug_traces.py."""
from __future__ import annotations

PROGRAMS = {
    "nested_lifo": """
// non-engine lifo with nested holds on one pool, grow-driven preemption
pool p { cap 40; block 2; preempt lifo; evict lru; }
stage d : delay;
stage f : fifo(2);
workload { arrive poisson(3); }
session {
  hold p (1 + ~uniform(0, 3)) {
    run d (~exp(1));
    hold p (1) { run f (~exp(2)); grow p (~uniform(0, 4)); run d (~exp(1)); }
    grow p (~uniform(0, 6));
    run f (~exp(3));
  } cache (inf);
}
""",
    "lru_many": """
// many cached prefixes, lru with blocks, spill to an lru tier
pool kv { cap 300; block 4; evict lru; spill host via wire (size / 50) when (size >= 4); }
pool host { cap 500; evict lru; }
stage wire : fifo;
stage d : delay;
workload {
  arrive poisson(20);
}
session {
  loop {
    hold kv (10 + ~uniform(0, 30)) reuse (inf) { run d (~exp(1)); } cache (inf);
    hold host (2) { run d (0.1); } cache (~uniform(0, 3));
    run d (~exp(2));
    branch (~bernoulli(0.3)) { end; }
  }
}
""",
    "keyed_to_lru": """
pool kv { cap 200; block 8; evict by (size, -age); spill host via wire (size / 40) when (size >= 8); }
pool host { cap 260; block 8; evict lru; }
stage wire : fifo;
stage d : delay;
workload { arrive poisson(12); }
session {
  loop {
    hold kv (8 + ~uniform(0, 40)) reuse (inf) { run d (~exp(1)); } cache (inf);
    hold host (~uniform(0, 16)) reuse (8) { run d (0.2); } cache (inf);
    run d (~exp(1));
    branch (~bernoulli(0.35)) { end; }
  }
}
""",
    "two_engines": """
// two step stages share one memory pool; sessions leave and rejoin residents while holding
pool kv { cap 400; block 16; preempt lifo; evict lru; }
stage a : step { memory kv; budget 256; chunk 64; cost 0.005 + tokens * 0.00002; }
stage b : step { memory kv; budget 128; cost 0.004 + tokens * 0.00003; }
stage tool : fifo(3);
stage user : delay;
workload {
  arrive poisson(6);
}
session {
  loop {
    hold kv (100 + ~uniform(0, 60)) {
      run a prefill (100) growing kv;
      run tool (~exp(20));
      run b decode (1 + floor(~exp(20))) growing kv;
      run a decode (1 + floor(~exp(10))) growing kv;
    } cache (inf);
    run user (~exp(1));
    branch (~bernoulli(0.5)) { end; }
  }
}
""",
    "engine_nested": """
pool kv { cap 240; block 4; preempt lifo; evict lru; }
stage e : step { memory kv; budget 128; chunk 32; cost 0.003 + tokens * 0.00004; }
stage user : delay;
workload { arrive poisson(5); }
session {
  loop {
    hold kv (20 + ~uniform(0, 20)) {
      run e prefill (20) growing kv;
      hold kv (~uniform(0, 8)) { run e decode (1 + floor(~exp(8))) growing kv; }
      run e decode (1 + floor(~exp(15))) growing kv;
    } cache (inf);
    run user (~exp(0.5));
    branch (~bernoulli(0.4)) { end; }
  }
}
""",
    "dead_spill": """
// reuse leaves dead entries; their evicted pieces spill into tight tiers, where a dead
// entry's pieces must meet again as one entry (keyed like 0.1.2's)
pool kv { cap 120; block 4; evict lru; spill tier via wire (size / 100) when (size >= 4); }
pool tier { cap 60; block 4; evict by (-size, last); spill disk via wire (0) when (1); }
pool disk { cap 40; evict lru; }
stage wire : fifo;
stage d : delay;
workload { arrive poisson(4); }
session {
  loop {
    hold kv (12 + ~uniform(0, 30)) reuse (~uniform(0, 12)) { run d (~exp(2)); } cache (inf);
    run d (~exp(1));
    branch (~bernoulli(0.3)) { end; }
  }
}
""",
}
