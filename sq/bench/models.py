"""The bench's models: the rows of the speed targets (issue 27), as program text.

The texts are fixed here, not read from examples/, so that an installed sq has
them and figures taken months apart time the same programs.
"""
from __future__ import annotations

from dataclasses import dataclass

MM1 = """
// M/M/1, rho = 0.9
stage server : fifo(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""

MG1_PS = """
// M/G/1-PS, rho = 0.9, hyperexponential service (cv^2 = 4)
stage server : ps(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~h2(1, 4)); observe response = now - t0; }
"""

MM8 = """
// M/M/8, rho = 0.9
stage servers : fifo(8);
workload { arrive poisson(7.2); }
session { set t0 = now; run servers (~exp(1)); observe response = now - t0; }
"""


def step_engine(rate: float) -> str:
    """A vLLM-like step engine (issue 27's program): one request per session, a paged KV pool
    that admits through the engine and preempts the newest; `rate` requests per second."""
    return f"""
pool kv {{ cap 4000; block 16; preempt lifo; admit via engine; }}
stage engine : step {{ budget 512; chunk 256; cost 0.01 + 0.0001*tokens; memory kv; }}
workload {{ arrive poisson({rate!r}); init {{ set n = ~uniform(10, 200); set o = ~uniform(10,100); }} session {{ request; }} }}
server {{ set t0 = now;
  hold kv (n) {{ run engine prefill (n) growing kv; observe ttft = now - t0; run engine decode (o) growing kv; }}
  observe response = now - t0; }}
"""


# examples/multi-turn/vllm.sq (commit 6af4864) without its comments: see that file for the why of each constant
CHAT = """
let kv_gib = 6;
let bs = 16;
let blocks = floor(kv_gib * 1024 * 1024 / 128 / bs);
let max_seqs = 128;
let max_batched = 2048;
let chunk_cap = 512;
let step0 = 0.008;
let tok = 2e-5;
let kvread = 4e-8;
let rate = 0.5;
let think_time = 12;
let go_on = 0.75;
pool seqs { cap max_seqs; admit via engine; }
pool kv { cap blocks * bs; block bs; evict lru; preempt lifo; }
stage engine : step {
  budget max_batched;
  chunk chunk_cap;
  cost step0 + max(kvread * (kv_decode + kv_prefill), tok * tokens);
  memory kv;
}
stage user : delay;
workload {
  arrive poisson(rate);
  hidden o;
  init { set K = 0; }
  turn {
    set n = K == 0 ? floor(~uniform(500, 2000)) : floor(~uniform(20, 300));
    set o = 1 + floor(~exp(200));
    set more = ~bernoulli(go_on);
  }
  session {
    loop {
      turn;
      request;
      branch (!more) { end; }
      run user (~exp(think_time));
    }
  }
}
server {
  set t0 = now;
  set started = 0;
  set prompt = K + n;
  hold seqs (1), kv (min(max(prompt, computed), room)) at admission (room = budget_left(engine)) {
    set ctx = max(prompt, computed);
    branch (computed == 0) {
      observe hit = cached / prompt;
      branch (K > 0) { observe hit_later = cached / prompt; }
    }
    run engine prefill (ctx - cached) growing kv;
    branch (!started) {
      set started = 1;
      set t1 = now;
      observe ttft = t1 - t0;
      branch (K == 0) { observe ttft_first = t1 - t0; }
    }
    run engine decode (prompt + o - ctx) growing kv;
  } cache (inf);
  set K = prompt + o;
  observe latency = now - t0;
}
"""


@dataclass(frozen=True)
class Model:
    name: str
    source: str
    horizon: float
    what: str
    warmup: float = 0.0
    runs: int = 1        # > 1: runs of one compiled program with seeds 1..runs (what a sweep is made of)
    arrivals: int = 0    # each run's arrival limit (0: none)

    def shortened(self, by: int) -> "Model":
        """The model with its horizon (a sweep: its number of runs) `by` times smaller: `--quick`."""
        if self.runs > 1:
            return Model(self.name, self.source, self.horizon, self.what, self.warmup, max(1, self.runs // by),
                         self.arrivals)
        return Model(self.name, self.source, self.horizon / by, self.what, min(self.warmup, self.horizon / by / 10),
                     self.runs, self.arrivals)


MODELS = [
    Model("mm1", MM1, 2_000_000, "M/M/1 fifo, rho 0.9"),
    Model("mm8", MM8, 300_000, "M/M/8 fifo, rho 0.9"),
    Model("mg1-ps", MG1_PS, 1_000_000, "M/G/1-PS, rho 0.9, h2 service"),
    # one iteration per ~10 ms and small batches: the cost per iteration is what is timed
    Model("vllm-lo", step_engine(2.0), 100_000, "vLLM-like step engine, light load (2 req/s)", warmup=100),
    Model("vllm-hi", step_engine(23.0), 5_000, "vLLM-like step engine, heavy load (23 req/s, KV full, preempting)",
          warmup=100),
    Model("chat", CHAT, 6000, "multi-turn chat, prefix cache across turns, think time", warmup=60),
    # many short runs of one compiled program: the lowering, the engine's set-up and the report are paid per run
    Model("sweep", MM1, 1e9, "short runs (1,000 arrivals each) of one compiled M/M/1, seeds 1, 2, ...",
          runs=1000, arrivals=1000),
]
