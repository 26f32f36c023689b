"""A roofline of a step's op classes from a model's shape and a GPU's datasheet.

Each kernel takes the longer of its arithmetic at the GPU's peak and its memory
traffic at the peak bandwidth, each derated by an efficiency factor, plus a
fixed launch time. The factors are round figures commonly seen for dense
bf16 GEMMs and streaming kernels (not fitted to anything here); the error they
leave against measured profiles is reported by `errors`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sq.costs.gpus import Gpu
from sq.costs.model import DTYPE_BYTES, Model
from sq.costs.profile import OpTables, expected_experts


@dataclass(frozen=True)
class Efficiency:
    compute: float = 0.75      # share of peak tensor FLOP/s a large GEMM reaches
    memory: float = 0.8        # share of peak bandwidth a streaming kernel reaches
    launch: float = 5e-6       # seconds a kernel costs however small (eager launch)


def _kernel(flops, nbytes, gpu: Gpu, dtype: str, eff: Efficiency):
    return np.maximum(np.asarray(flops, float) / (gpu.peak_flops(dtype) * eff.compute),
                      np.asarray(nbytes, float) / (gpu.mem_bw_gbs * 1e9 * eff.memory)) + eff.launch


def _linear(t, n_in, n_out, gpu, dtype, eff):
    b = DTYPE_BYTES[dtype]
    return _kernel(2 * t * n_in * n_out, (n_in * n_out + t * (n_in + n_out)) * b, gpu, dtype, eff)


def _stream(nbytes, gpu, dtype, eff):
    return _kernel(0, nbytes, gpu, dtype, eff)


def default_grids() -> dict:
    """The grids of LLMServingSim's profiler (tokens 1-16 then every 16 to 2048; chunks, decodes
    and contexts by doubling)."""
    tokens = np.array(list(range(1, 17)) + list(range(32, 2049, 16)), dtype=float)
    chunks = [0] + [16 * 2 ** i for i in range(8)]
    decodes = [0] + [2 ** i for i in range(9)]
    kvs = [0] + [16 * 2 ** i for i in range(11)]
    rows = [(pc, kp, nd, kv, 0.0) for pc in chunks for kp in (kvs if pc else [0]) for nd in decodes
            for kv in (kvs[1:] if nd else [0]) if pc or nd]
    return {"tokens": tokens, "attention": np.array(rows, dtype=float),
            "sequences": np.arange(1, 257, dtype=float), "moe": None}


def roofline_tables(model: Model, gpu: Gpu, dtype: str = "bf16", tp: int = 1,
                    eff: Efficiency = Efficiency(), like: OpTables | None = None, ep: int = 1) -> OpTables:
    """The op classes of `model` on `gpu` as the roofline predicts them, on `like`'s grids
    (a measured profile's, to compare) or on the profiler's default grids."""
    grids = default_grids() if like is None else {
        "tokens": like.tokens, "attention": like.attention.copy(), "sequences": like.sequences,
        "moe": like.moe_table}
    b, T = DTYPE_BYTES[dtype], grids["tokens"]
    H, hd = model.hidden, model.head_dim
    heads, kv_heads = max(1, model.heads // tp), max(1, model.kv_heads // tp)
    q, kv = heads * hd, kv_heads * hd
    dense = {
        "layernorm": 2 * _stream(2 * T * H * b, gpu, dtype, eff),
        "qkv_proj": _linear(T, H, q + 2 * kv, gpu, dtype, eff),
        "rotary_emb": _stream(2 * T * (q + kv) * b, gpu, dtype, eff),
        "o_proj": _linear(T, q, H, gpu, dtype, eff),
    }
    if not model.moe:
        inter = model.intermediate // tp
        dense["gate_up_proj"] = _linear(T, H, 2 * inter, gpu, dtype, eff)
        dense["act_fn"] = _stream(3 * T * inter * b, gpu, dtype, eff)
        dense["down_proj"] = _linear(T, inter, H, gpu, dtype, eff)
    if tp > 1:   # two all-reduces a layer (after o_proj and down_proj), ring: 2 (tp-1)/tp of the data each way
        dense["all_reduce"] = 2 * (_kernel(0, 0, gpu, dtype, eff)
                                   + 2 * (tp - 1) / tp * T * H * b / (gpu.link_gbs * 1e9 * eff.memory))
    once = _stream(2 * T * H * b, gpu, dtype, eff) * 2        # embedding gather, final norm
    moe = moe_table = None
    if model.moe:
        moe = _moe(T, expected_experts(T, model.experts, model.top_k, ep), model, gpu, dtype, tp, eff)
        if ep > 1:
            moe = moe + expert_exchange(T, model, ep, datasheet_link(gpu, eff), dtype)
        if grids["moe"] is not None:
            moe_table = grids["moe"].copy()
            moe_table[:, 2] = _moe(moe_table[:, 0], moe_table[:, 1], model, gpu, dtype, tp, eff)
    att = grids["attention"]
    pc, kp, nd, kvd = att[:, 0], att[:, 1], att[:, 2], att[:, 3]
    flops = 4 * q * (pc * (kp + pc / 2) + nd * kvd)
    traffic = (2 * kv * ((kp + pc) + nd * kvd) + 2 * q * (pc + nd)) * b
    att[:, 4] = _kernel(flops, traffic, gpu, dtype, eff)
    S = grids["sequences"]
    vocab = model.vocab // tp
    per_sequence = _linear(S, H, vocab, gpu, dtype, eff) + _stream(3 * S * model.vocab * 4, gpu, dtype, eff)
    return OpTables(T, dense, once, moe, att, S, per_sequence, moe_table,
                    meta={"model": model.name, "hardware": gpu.name, "source": "roofline"})


def _moe(tokens, activated, model: Model, gpu, dtype, tp, eff):
    """One MoE layer: the experts hit are read once; each token goes through top_k of them."""
    b, H, w = DTYPE_BYTES[dtype], model.hidden, model.expert_intermediate
    flops = 2 * tokens * model.top_k * 3 * H * w / tp
    traffic = (activated * 3 * H * w / tp + tokens * model.top_k * (2 * H + 3 * w)) * b
    return _kernel(flops, traffic, gpu, dtype, eff) + 2 * eff.launch     # router and the combine


COLLECTIVE_LATENCY = 20e-6     # seconds a NCCL collective over PCIe/NVLink costs however small (estimate)


def datasheet_link(gpu: Gpu, eff: Efficiency = Efficiency()) -> tuple[float, float]:
    """(bytes per second, seconds per collective) of the GPU's link as the table gives it, derated."""
    return gpu.link_gbs * 1e9 * eff.memory, COLLECTIVE_LATENCY


def expert_exchange(tokens, model: Model, ep: int, link: tuple[float, float], dtype: str = "bf16") -> np.ndarray:
    """One MoE layer's token exchange under expert parallelism over `ep` GPUs, as vLLM's
    all-gather/reduce-scatter backend does it: each GPU receives the other engines' hidden
    states before the experts and sends their partial sums back after. `link`: (bytes per
    second, seconds per collective)."""
    nbytes = (ep - 1) * np.asarray(tokens, float) * model.hidden * DTYPE_BYTES[dtype]
    return 2 * (link[1] + nbytes / link[0])


def errors(measured: OpTables, predicted: OpTables) -> dict[str, float]:
    """MAPE of `predicted` against `measured` per op class (both on the measured grids)."""
    def mape(p, m):
        p, m = np.asarray(p, float), np.asarray(m, float)
        return float(np.mean(np.abs(p / m - 1.0)))
    shared = set(predicted.dense) & set(measured.dense)
    out = {"dense": mape(sum(predicted.dense[k] for k in shared), sum(measured.dense[k] for k in shared)),
           "attention": mape(predicted.attention[:, 4], measured.attention[:, 4]),
           "per_sequence": mape(predicted.per_sequence, measured.per_sequence)}
    if measured.moe_table is not None and predicted.moe_table is not None:
        out["moe"] = mape(predicted.moe_table[:, 2], measured.moe_table[:, 2])
    return out
