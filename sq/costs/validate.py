"""Replay a measured vLLM run through a vLLM-like serQ program and compare latencies.

The program (`vllm_program`) is continuous batching on a step stage: a token
budget of `max_num_batched_tokens` per step shared by decodes and chunked
prefills, at most `max_num_seqs` running requests (a pool admitted via the
engine), KV blocks of 16 tokens in a pool sized from GPU memory, and
preemption of the newest request when a step needs a block the pool does not
have; a preempted request recomputes its prompt and what it had generated
(its prefix, if still cached, is reused). Its costs come from a `CostModel`,
with the profile's attention skew (`kv_decode_max`). vLLM 0.19 schedules
asynchronously (step N+1 is planned before N's outputs are back), so an
arrival is first scheduled a step later than a synchronous scheduler would:
each request waits out one step (a one-token job, counted in the throughput)
before it is admitted. Data-parallel MoE engines with expert parallelism are
one lockstep step stage at the busiest engine's cost (`vllm_program`).

The requests arrive at their recorded times within the 0.1.2 dialect
(`arrival="delay"`, the default): every request is one session arriving at 0
(`arrive batch(N)`), bound to line i of a trace (`ordered`) carrying its tokens
and, as `think`, its arrival time, which it waits on a `delay` before its
request. `arrival="replay"` writes the trace in vLLM's per-request format and
arrives by `arrive replay` (sq's extension for production traces, where the
build has it); both give the same prediction to the last digit
(tests/costs/test_costs.py).

Nothing measured about latency is read before the prediction: `read_requests`
takes only token counts and the arrival clock (`queued_ts`), and
`read_measured` reads the latencies afterwards to compare.
"""
from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sq.costs.costmodel import CostModel, from_profile, from_roofline
from sq.costs.memory import datasheet_bytes, kv_pool, recorded_pool
from sq.errors import SqError

BANDS = (("light", 0.0, 1.0), ("loaded", 1.0, 10.0), ("overload", 10.0, math.inf))   # by measured queue wait, s
METRICS = ("ttft", "tpot", "e2e")
QUANTILES = (("p50", 50), ("p90", 90), ("p99", 99))
SLOTS = 16           # 1-second bins of the throughput comparison are summed over windows of this many seconds


@dataclass
class Engine:
    max_num_seqs: int
    max_batched_tokens: int
    tp: int
    replicas: int                  # data-parallel engines (requests alternate between them)
    expert_parallel: bool          # a MoE model's experts spread over the replicas' GPUs
    recorded_blocks: int | None    # vLLM's num_gpu_blocks, when the run recorded it
    memory_bytes: float
    mem_util: float
    hardware: str
    graph_tokens: int              # the largest step vLLM runs as a CUDA graph (max_cudagraph_capture_size)
    link: tuple[float, float] | None = None   # the GPUs' link as the run's config.json gives it: B/s, s


@dataclass
class Requests:
    prompt: np.ndarray
    output: np.ndarray
    arrival: np.ndarray            # seconds from the first arrival


def _json(path: Path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SqError(f"run: no {path.name} in {path.parent}", phase="settings") from None
    except json.JSONDecodeError as err:
        raise SqError(f"run: {path}: not JSON ({err})", phase="settings") from None


def read_engine(run: Path) -> Engine:
    meta, config = _json(run / "meta.json"), _json(run / "config.json")
    kw = meta.get("engine_kwargs", {})
    try:
        inst = config["nodes"][0]["instances"][0]
        npu = inst["npu_mem"]
    except (KeyError, IndexError, TypeError):
        raise SqError(f"run: {run / 'config.json'} has no nodes[0].instances[0].npu_mem "
                      "(LLMServingSim's cluster config is expected)", phase="settings") from None
    cache = meta.get("kv_cache") or {}
    memory = (meta.get("hardware") or {}).get("device_total_memory_bytes") or datasheet_bytes(npu["mem_size"])
    seqs, batched = int(kw.get("max_num_seqs", 256)), int(kw.get("max_num_batched_tokens", 2048))
    graphs = ((meta.get("resolved_config") or {}).get("compilation_config") or {}).get("max_cudagraph_capture_size")
    return Engine(seqs, batched, int(kw.get("tensor_parallel_size", 1)), int(kw.get("data_parallel_size", 1)),
                  bool(kw.get("enable_expert_parallel", False)), cache.get("num_gpu_blocks"), float(memory),
                  float(cache.get("gpu_memory_utilization") or npu.get("mem_util", 0.9)), inst.get("hardware", "?"),
                  int(graphs or default_graph_tokens(seqs, batched)), _link(config))


def _link(config: dict) -> tuple[float, float] | None:
    """(bytes per second, seconds) of the GPU-to-GPU link from the cluster config's `link_bw`
    (GB/s) and `link_latency` (ns), when both are single numbers."""
    bw, latency = config.get("link_bw"), config.get("link_latency")
    if isinstance(bw, (int, float)) and isinstance(latency, (int, float)) and bw > 0:
        return float(bw) * 1e9, float(latency) * 1e-9
    return None


def default_graph_tokens(max_num_seqs: int, max_batched_tokens: int) -> int:
    """vLLM 0.19's default max_cudagraph_capture_size (VllmConfig._set_cudagraph_sizes, no
    speculative decoding): twice the sequences, at most 512, at most the step's token budget."""
    return min(2 * max_num_seqs, 512, max_batched_tokens)


def _lines(run: Path) -> list[dict]:
    path = run / "requests.jsonl"
    if not path.exists():
        raise SqError(f"run: no requests.jsonl in {run}", phase="settings")
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise SqError(f"{path}:{number}: not a JSON object ({err.msg})", phase="settings") from None
    if not rows:
        raise SqError(f"{path}: no requests", phase="settings")
    return rows


def _columns(run: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The named fields of every request, as floats; a missing or non-numeric one is an SqError."""
    path = run / "requests.jsonl"
    rows = _lines(run)
    out = {}
    for name in names:
        try:
            out[name] = np.array([float(r[name]) for r in rows])
        except KeyError:
            line = next(i for i, r in enumerate(rows, 1) if name not in r)
            raise SqError(f"{path}:{line}: no `{name}`", phase="settings") from None
        except (TypeError, ValueError):
            raise SqError(f"{path}: `{name}` must be a number on every line", phase="settings") from None
    return out


def read_requests(run: Path) -> Requests:
    """The requests as a replay needs them: token counts and arrival times, nothing else."""
    col = _columns(run, ("input_toks", "output_toks", "queued_ts"))
    return Requests(col["input_toks"].astype(np.int64), col["output_toks"].astype(np.int64),
                    col["queued_ts"] - col["queued_ts"].min())


def read_measured(run: Path) -> dict[str, np.ndarray]:
    """Per-request TTFT, TPOT and end-to-end latency as the server measured them, and queue wait."""
    col = _columns(run, ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts", "output_toks"))
    out = col["output_toks"]
    tpot = np.where(out > 1, (col["last_token_ts"] - col["first_token_ts"]) / np.maximum(out - 1, 1), np.nan)
    return {"ttft": col["first_token_ts"] - col["queued_ts"], "tpot": tpot,
            "e2e": col["last_token_ts"] - col["queued_ts"], "wait": col["scheduled_ts"] - col["queued_ts"]}


def vllm_program(engine: Engine, blocks: int, block: int, n: int, horizon: float, arrival: str = "delay",
                 speed: float = 1.0) -> str:
    """The serQ text of a vLLM-like deployment using `costs.sq`.

    Data-parallel engines of a dense model are independent (requests alternate between
    them). Those of a MoE model with expert parallelism step in lockstep (every layer's
    experts gather all engines' tokens, and vLLM pads the engines to one token count while
    they run CUDA graphs): one step stage runs all `replicas` ranks, with their slots, budgets
    and KV pooled, each prefill capped at one rank's budget, and the cost of the busiest rank
    (`step_cost_lockstep`).

    `arrival`: "replay" (`arrive replay(speed)` over `requests.jsonl`, vLLM's per-request
    format, times divided by `speed`) or "delay" (the 0.1.2 dialect: every session arrives at
    0 and waits its recorded time, already divided, on a `delay`; see write_trace)."""
    lockstep = engine.replicas > 1 and engine.expert_parallel
    ranks = engine.replicas if lockstep else 1
    engines = 1 if lockstep else engine.replicas
    lines = ['use "costs.sq";', f"let blocks = {blocks};", f"let bs = {block};",
             f"let max_seqs = {engine.max_num_seqs};", f"let max_batched = {engine.max_batched_tokens};",
             f"let ranks = {ranks};", f"let graph_tokens = {engine.graph_tokens};"]
    cost = "step_cost_lockstep(ranks, max_batched, graph_tokens)" if lockstep else "step_cost()"
    chunk = " chunk max_batched;" if lockstep else ""
    for i in range(engines):
        lines += [f"pool seqs{i} {{ cap ranks * max_seqs; admit via engine{i}; }}",
                  f"pool kv{i} {{ cap ranks * blocks * bs; block bs; evict lru; preempt lifo; }}",
                  f"stage engine{i} : step {{ budget ranks * max_batched;{chunk} cost {cost}; memory kv{i}; }}"]
    lines += [
        *(["stage arrival : delay;"] if arrival == "delay" else []),
        f"run {{ horizon {horizon:g}; warmup 0; seed 1; }}",
        "// one request: admitted when a slot is free and its whole prompt fits (vLLM reserves the full",
        "// input); the first step takes what the budget leaves; decodes grow the KV a block at a time;",
        "// `computed` > 0 after a preemption: the request recomputes what it had",
        "def serve_on(E, S, K) {",
        "  // vLLM's async scheduling plans the next step before this one ends: an arrival joins",
        "  // the step after next (one token stands for the step it waits out)",
        "  run E decode (1);",
        "  hold S (1), K (min(max(p, computed), room)) reserve (max(p, computed)) at admission (room = budget_left(E)) {",
        "    set ctx = max(p, computed);",
        "    run E prefill (ctx - cached) growing K;",
        "    branch (!started) { set started = 1; set t1 = now; observe ttft = t1 - t0; }",
        "    branch (p + o - 1 - ctx > 0) { run E decode (p + o - 1 - ctx) growing K; }",
        "  } cache (inf);",
        "}",
        *([f"workload {{ arrive batch({n}); trace \"requests.csv\" ordered; hidden out;",
           "  session { turn; run arrival (think); request; } }"] if arrival == "delay" else
          [f"workload {{ arrive replay({speed!r}); trace \"requests.jsonl\"; hidden out; session {{ turn; request; }} }}"]),
        "server {",
        "  set t0 = now; set started = 0; set p = new; set o = out;",
    ]
    if engines == 1:
        lines.append("  serve_on(engine0, seqs0, kv0);")
    else:   # requests alternate between the independent engines
        for i in range(engines):
            lines.append(f"  branch (serial - {engines} * floor(serial / {engines}) == {i}) "
                         f"{{ serve_on(engine{i}, seqs{i}, kv{i}); }}")
    lines += ["  observe e2e = now - t0;", "  branch (o > 1) { observe tpot = (now - t1) / (o - 1); }", "}"]
    return "\n".join(lines) + "\n"


def write_trace(folder: Path, req: Requests, arrival: str, scale: float = 1.0) -> np.ndarray:
    """The requests as the program's trace, in arrival order; returns that order (session serial
    i is request order[i]). "replay": vLLM's per-request JSON lines with the server's arrival
    clock as `arrival_time`; "delay": serQ's CSV with the arrival (divided by `scale`) as `think`."""
    order = np.argsort(req.arrival, kind="stable")
    if arrival == "replay":
        with open(folder / "requests.jsonl", "w", encoding="utf-8") as f:
            for i in order:
                f.write(json.dumps({"arrival_time": float(req.arrival[i]), "input_toks": int(req.prompt[i]),
                                    "output_toks": int(req.output[i])}) + "\n")
    else:
        with open(folder / "requests.csv", "w", encoding="utf-8") as f:
            f.write("session,turn,new,out,think\n")
            for k, i in enumerate(order):
                f.write(f"{k},0,{int(req.prompt[i])},{int(req.output[i])},{float(req.arrival[i]) / scale!r}\n")
    return order


@dataclass
class Prediction:
    ttft: np.ndarray
    tpot: np.ndarray
    e2e: np.ndarray
    throughput: dict               # "prompt", "generated": tokens per second, 1-s bins from the first arrival
    program: str
    ended: int


def predict(cm: CostModel, engine: Engine, req: Requests, scale: float = 1.0, blocks: int | None = None,
            arrival: str = "delay") -> Prediction:
    """Run the replay (arrivals compressed by `scale`: rate x scale) and collect per-request latencies."""
    from sq.engine.run import run
    from sq.frontend.compile import compile_program
    blocks = blocks if blocks is not None else cm.kv.blocks
    n = len(req.prompt)
    horizon = float(req.arrival.max() / scale + 100 + 10 * n)
    bins: dict[str, dict[int, float]] = {"prompt": {}, "generated": {}}

    def on_lines(chunk):
        for line in chunk:
            parts = line.split()
            if not parts or parts[0] != "ITER":
                continue
            t = int(float(parts[1]))
            for job in parts[2:]:       # serial:turn:p|d TOKENS
                kind = "prompt" if job.split(":")[2][0] == "p" else "generated"
                bins[kind][t] = bins[kind].get(t, 0.0) + float(job.split(":")[2][1:])

    with tempfile.TemporaryDirectory(prefix="sq-validate-") as tmp:
        folder = Path(tmp)
        (folder / "costs.sq").write_text(cm.library(skew=True), encoding="utf-8")
        order = write_trace(folder, req, arrival, scale)
        text = vllm_program(engine, blocks, cm.kv.block, n, horizon, arrival, scale)
        (folder / "replay.sq").write_text(text, encoding="utf-8")
        report = run(compile_program(folder / "replay.sq"), trace_iterations=on_lines)

    def per_request(name):
        values = np.full(n, np.nan)
        obs = report.observes.get(name)
        if obs is not None and obs.count:
            values[order[np.asarray(obs.sessions, dtype=np.int64)]] = obs.samples
        return values

    span = max(max(b, default=-1) for b in bins.values()) + 1
    throughput = {kind: np.array([b.get(t, 0.0) for t in range(span)]) for kind, b in bins.items()}
    return Prediction(per_request("ttft"), per_request("tpot"), per_request("e2e"), throughput, text,
                      int(report.ended))


def _stats(x: np.ndarray) -> dict[str, float]:
    x = x[np.isfinite(x)]
    if not len(x):
        return {"mean": math.nan, **{q: math.nan for q, _ in QUANTILES}}
    return {"mean": float(x.mean()), **{q: float(np.percentile(x, p)) for q, p in QUANTILES}}


def _err(sq_value: float, measured: float) -> float:
    return sq_value / measured - 1.0 if measured else math.nan


@dataclass
class Validation:
    run: str
    table: dict = field(default_factory=dict)       # metric -> stat -> (measured, sq, error)
    bands: dict = field(default_factory=dict)       # band -> {"requests": n, metric: (measured, sq, error)}
    throughput: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=dict)
    ended: int = 0
    requests: int = 0
    blocks: int = 0
    blocks_from: str = ""

    def to_json(self) -> dict:
        out = {"run": self.run, "requests": self.requests, "ended": self.ended, "kv_blocks": self.blocks,
               "kv_blocks_from": self.blocks_from}
        for m in METRICS:
            for stat in ("mean", "p90"):
                out[f"{m}_{stat}_error"] = self.table[m][stat][2]
        out["table"] = {m: {s: dict(zip(("measured", "sq", "error"), v)) for s, v in d.items()}
                        for m, d in self.table.items()}
        out["bands"] = self.bands
        out["throughput"] = self.throughput
        out["capacity"] = self.capacity
        return out

    def text(self) -> str:
        rows = [f"validate {self.run}: {self.requests} requests ({self.ended} ended in sq); "
                f"KV {self.blocks} blocks ({self.blocks_from})",
                f"{'metric':<6} {'stat':<5} {'measured':>10} {'sq':>10} {'error':>8}"]
        for m in METRICS:
            for stat, (meas, pred, err) in self.table[m].items():
                rows.append(f"{m:<6} {stat:<5} {meas:>10.4f} {pred:>10.4f} {err:>+8.1%}")
        rows.append("by load band (measured queue wait): requests, mean TTFT / e2e measured -> sq (error)")
        for band, d in self.bands.items():
            if d["requests"]:
                t, e = d["ttft"], d["e2e"]
                rows.append(f"  {band:<9} {d['requests']:>4}  ttft {t[0]:.3f} -> {t[1]:.3f} ({t[2]:+.1%})"
                            f"  e2e {e[0]:.3f} -> {e[1]:.3f} ({e[2]:+.1%})")
        for kind, tp in self.throughput.items():
            rows.append(f"{kind} tokens/s: measured mean {tp['measured_mean']:.0f}, sq {tp['sq_mean']:.0f}; "
                        f"error over {SLOTS}-s windows {tp['window_error']:.1%}; busy for {tp['measured_span']:.0f} s "
                        f"measured, {tp['sq_span']:.0f} s in sq")
        lo, hi = CAPACITY_RANGE
        for m, c in self.capacity.items():
            factor = c["sq_rate_factor"]
            head = f"capacity for {m}.p90 <= {c['slo_p90']:.4g} s (the measured run's own p90 at its rate): "
            if factor >= hi:
                rows.append(head + f"sq meets it at every rate up to {hi:g} x the measured rate")
            elif factor <= lo:
                rows.append(head + f"sq misses it even at {lo:g} x the measured rate")
            else:
                rows.append(head + f"sq meets it up to {factor:.3f} x the measured rate; capacity error "
                            f"{c['capacity_error']:+.1%}")
        return "\n".join(rows)


def _throughput(run: Path, pred: Prediction) -> dict:
    """Prompt and generated tokens per second, sq against the server's log (`timeseries.csv`),
    both from the first arrival; `window_error` is sum |sq - measured| / sum measured over
    SLOTS-second windows. sq counts a preempted request's recomputed prompt again."""
    import csv
    path = run / "timeseries.csv"
    if not path.exists():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for kind, column in (("prompt", "prompt_throughput"), ("generated", "gen_throughput")):
        measured, sim = np.array([float(r[column]) for r in rows]), pred.throughput[kind]
        span = max(len(measured), len(sim))
        a, b = np.zeros(span), np.zeros(span)
        a[:len(measured)], b[:len(sim)] = measured, sim
        starts = np.arange(0, span, SLOTS)
        wa, wb = np.add.reduceat(a, starts), np.add.reduceat(b, starts)
        busy_m, busy_s = np.nonzero(a)[0], np.nonzero(b)[0]
        out[kind] = {"measured_mean": float(measured.mean()) if len(measured) else 0.0,
                     "sq_mean": float(sim.mean()) if len(sim) else 0.0,
                     "window_error": float(np.abs(wb - wa).sum() / max(wa.sum(), 1e-12)),
                     "measured_span": float(busy_m[-1] + 1) if len(busy_m) else 0.0,
                     "sq_span": float(busy_s[-1] + 1) if len(busy_s) else 0.0}
    return out


def _p90(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.percentile(values, 90)) if len(values) else math.inf


CAPACITY_RANGE = (0.25, 4.0)     # factors on the measured rate searched


def capacity(cm, engine, req, blocks, metric: str, slo: float, lo=CAPACITY_RANGE[0], hi=CAPACITY_RANGE[1],
             steps=10) -> float:
    """The largest factor on the measured rate at which sq's p90 of `metric` stays within `slo`
    (bisection on a geometric scale; a request that never finishes fails the SLO)."""
    def meets(scale):
        pred = predict(cm, engine, req, scale, blocks)
        return not np.isnan(pred.ttft).any() and _p90(getattr(pred, metric)) <= slo
    if not meets(lo):
        return lo
    if meets(hi):
        return hi
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return math.sqrt(lo * hi)


def validate(run_dir, profile_dir=None, model_config=None, with_capacity: bool = True,
             roofline: bool = False) -> Validation:
    """Replay the run with costs from `profile_dir`, or (`roofline`) from a roofline of the run's
    GPU (sq's table) and `model_config`, and compare with what the run measured."""
    run = Path(run_dir)
    if not run.is_dir():
        raise SqError(f"run: {run} is not a directory", phase="settings")
    engine = read_engine(run)
    req = read_requests(run)
    limits = {"max_num_seqs": engine.max_num_seqs, "max_batched_tokens": engine.max_batched_tokens,
              "mem_util": engine.mem_util}
    if roofline:
        if model_config is None:
            raise SqError("validate: a roofline needs the model's config (--model-config)", phase="settings")
        cm = from_roofline(engine.hardware, model_config, tp=engine.tp,
                           ep=engine.replicas if engine.expert_parallel else 1, **limits)
    else:
        cm = from_profile(profile_dir, tp=engine.tp, model_config=model_config, memory_bytes=engine.memory_bytes,
                          ep=engine.replicas if engine.expert_parallel else 1, link=engine.link, **limits)
    if engine.recorded_blocks:
        pool = recorded_pool(cm.model, engine.recorded_blocks, tp=engine.tp)
    else:
        pool = kv_pool(cm.model, engine.memory_bytes, engine.mem_util, engine.max_batched_tokens,
                       engine.max_num_seqs, tp=engine.tp)
    pred = predict(cm, engine, req, 1.0, pool.blocks)
    # the prediction is made: only now the measured latencies are read
    measured = read_measured(run)
    v = Validation(run=str(run), ended=pred.ended, requests=len(req.prompt), blocks=pool.blocks, blocks_from=pool.how)
    for m in METRICS:
        ms, ps = _stats(measured[m]), _stats(getattr(pred, m))
        v.table[m] = {s: (ms[s], ps[s], _err(ps[s], ms[s])) for s in ms}
    for band, lo, hi in BANDS:
        mask = (measured["wait"] >= lo) & (measured["wait"] < hi)
        d = {"requests": int(mask.sum())}
        for m in METRICS:
            ms, ps = _stats(measured[m][mask]), _stats(getattr(pred, m)[mask])
            d[m] = (ms["mean"], ps["mean"], _err(ps["mean"], ms["mean"]))
        v.bands[band] = d
    v.throughput = _throughput(run, pred)
    if with_capacity:
        # The SLO is the measured run's own p90: the real server met it at exactly its rate,
        # so the rate at which sq just meets it, over the measured rate, less 1 is the error.
        for m in ("ttft", "tpot"):
            slo = _p90(measured[m])
            factor = capacity(cm, engine, req, pool.blocks, m, slo)
            v.capacity[m] = {"slo_p90": slo, "sq_rate_factor": factor, "capacity_error": factor - 1.0}
    return v
