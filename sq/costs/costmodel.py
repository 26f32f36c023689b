"""`CostModel`: what a serQ program needs to run a (GPU, model, TP, dtype) — and its library text."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from sq.costs.fit import Fit
from sq.costs.gpus import Gpu, gpu as gpu_row
from sq.costs.memory import KvPool, datasheet_bytes, kv_pool
from sq.costs.model import Model, load_model
from sq.costs.profile import find_model_config, read_meta, read_profile, tp_folder
from sq.costs.roofline import Efficiency, datasheet_link, errors, expert_exchange, roofline_tables
from sq.costs.step import ATTENTION_TERMS, StepCost, fit_step
from sq.errors import SqError

MAX_NUM_SEQS = 256             # vLLM's defaults for a GPU-class server
MAX_BATCHED_TOKENS = 2048
MEM_UTIL = 0.9


@dataclass
class CostModel:
    model: Model
    gpu: str
    tp: int
    dtype: str
    step: StepCost
    kv: KvPool
    max_num_seqs: int
    max_batched_tokens: int
    source: str                          # one line: where the costs come from
    roofline_error: dict = field(default_factory=dict)   # MAPE per op class, roofline vs the profile

    def cost(self, **context):
        """The step cost (seconds) for the stage's cost variables: tokens, prefilled, attention,
        kv_prefill, decoders, kv_decode (numbers: a float; arrays: an array)."""
        if all(np.ndim(v) == 0 for v in context.values()):
            return float(self.step.seconds(**{k: np.atleast_1d(v) for k, v in context.items()})[0])
        return self.step.seconds(**context)

    def coefficients(self) -> dict[str, tuple[float, float]]:
        """{def name: (value, standard error)} of every fitted coefficient."""
        out = {}
        for prefix, fit in self.parts():
            for name, c, se in zip(fit.names, fit.coef, fit.stderr):
                out[prefix + name] = (float(c), float(se))
        return out

    def parts(self) -> list[tuple[str, Fit]]:
        """(def-name prefix, fit) of every fitted part, as the library names their coefficients."""
        s = self.step
        parts = [("cm_tok_", s.tokens), ("cm_att_", s.attention), ("cm_seq_", s.sequences)]
        return parts + ([("cm_moe_", s.experts)] if s.experts is not None else [])

    def library(self, skew: bool = False) -> str:
        return library_text(self, skew)


def _num(x: float) -> str:
    return repr(float(x))     # every digit: the library computes what CostModel.cost does


def _hinge(prefix: str, fit: Fit, knots: tuple, var: str) -> str:
    parts = [f"{prefix}base()", f"{prefix}slope() * {var}"]
    parts += [f"{prefix}above_{k:g}() * max(0, {var} - {k:g})" for k in knots]
    return " + ".join(parts)


def _skew(s) -> str:
    """The skew term's alpha by decode bucket and prefill, as nested conditionals."""
    text = None
    for bound, dec, mix in reversed(tuple(zip(s.skew_bounds, s.skew_decode, s.skew_mixed))):
        here = f"(pf > 0 ? {_num(mix)} : {_num(dec)})"
        text = here if text is None else f"(nd <= {bound:g} ? {here} : {text})"
    return text


def library_text(cm: CostModel, skew: bool = False) -> str:
    """The library; `skew`: steps' attention grows with their decodes' unequal contexts, read
    from `kv_decode_max` (sq's extension: docs/differences.md), when the profile measured it."""
    s = cm.step
    skew = skew and bool(s.skew_bounds)
    fits = ((s.tokens, "whole-step dense ops by tokens"), (s.attention, "attention, one layer"),
            (s.sequences, "per-sequence ops (lm_head, sampler)"))
    if s.experts is not None:
        fits += ((s.experts, "expert layers by one engine's tokens"),)
    lines = [
        f"// Step costs and limits for {cm.model.name} on {cm.gpu}, TP {cm.tp}, {cm.dtype}: written by `python -m sq costs`.",
        f"// Source: {cm.source}",
        "// Fitted by weighted least squares (relative residuals) to the terms a step stage's `cost` reads;",
        "// each coefficient is followed by its standard error. Residuals (MAPE, max) of each part:",
    ]
    lines += [f"//   {what}: {f.mape:.1%}, max {f.max_ape:.0%} over {f.rows} rows" for f, what in fits]
    if cm.roofline_error:
        lines.append("// Roofline vs this profile (MAPE per op class): " +
                     ", ".join(f"{k} {v:.0%}" for k, v in cm.roofline_error.items()))
    lines += ["// Times in seconds. A library holds only defs: read a constant as `name()`,",
              "// and bind it to a `let` where a constant is needed (`let blocks = kv_blocks();`).",
              "", f"def cm_layers() = {s.layers};"]
    for prefix, fit in cm.parts():
        for name, c, se in zip(fit.names, fit.coef, fit.stderr):
            lines.append(f"def {prefix}{name}() = {_num(c)};   // ± {se:.2g}")
    experts = "0" if s.experts is None else _hinge("cm_moe_", s.experts, s.expert_knots, "t")
    kvm = "kv_decode_max" if skew else "0"
    att = " + ".join(f"cm_att_{name}()" + ("" if term == "1" else f" * {term}") for name, term in ATTENTION_TERMS)
    lines += [
        "",
        f"def cm_tokens_cost(t) = {_hinge('cm_tok_', s.tokens, s.token_knots, 't')};",
        f"def cm_attention_cost(pf, att, kvp, nd, kvd) = cm_layers() * ({att});",
        f"def cm_sequence_cost(n) = {_hinge('cm_seq_', s.sequences, s.sequence_knots, 'n')};",
        "// a MoE model's expert layers by one engine's tokens (0 for a dense model)",
        f"def cm_experts_cost(t) = {experts};",
        "// decodes of unequal contexts: attention a share alpha of the way from all at their mean",
        "// context to all at the longest, kvm (alpha: the profiler's, skew_fit.csv)"
        + ("" if skew else "; not applied (0)"),
        "def cm_skew_cost(pf, nd, kvd, kvm) = " + (
            f"cm_layers() * {_skew(s)} * (cm_att_decode_kv() + (pf > 0 ? cm_att_mixed_decode_kv() : 0))"
            " * max(0, nd * kvm - kvd);" if skew else "0;"),
        "def cm_step(t, pf, att, kvp, nd, kvd, kvm) = cm_tokens_cost(t) + cm_experts_cost(t)"
        " + cm_attention_cost(pf, att, kvp, nd, kvd) + cm_skew_cost(pf, nd, kvd, kvm)"
        " + cm_sequence_cost(nd + (pf > 0 ? 1 : 0));",
        "// the step stage's cost: `cost step_cost();`",
        f"def step_cost() = cm_step(tokens, prefilled, attention, kv_prefill, decoders, kv_decode, {kvm});",
        "",
        "// r data-parallel engines of a MoE model stepping in lockstep (vLLM: the expert layers gather",
        "// every engine's tokens, so each step lasts as long as the busiest engine's), pooled in one step",
        "// stage of r x the slots and budget: the decodes split evenly, the busiest engine also runs",
        "// what prefill its budget b leaves. Its dense ops, attention and sampling are its own; the",
        "// experts see everyone's tokens, padded to its count while that fits a CUDA graph (g tokens).",
        "def cm_lockstep(r, g, nd, pf) = cm_tokens_cost(nd + pf)",
        "  + cm_experts_cost(nd + pf <= g ? nd + pf : tokens / r)",
        "  + cm_attention_cost(pf, pf > 0 ? attention * pf / prefilled : 0, pf > 0 ? kv_prefill * pf / prefilled : 0,"
        " nd, kv_decode / r)",
        f"  + cm_skew_cost(pf, nd, kv_decode / r, {kvm}) + cm_sequence_cost(nd + (pf > 0 ? 1 : 0));",
        "def step_cost_lockstep(r, b, g) = cm_lockstep(r, g, decoders / r, min(prefilled, max(b - decoders / r, 0)));",
        "",
        f"// KV pool: {cm.kv.how}",
        f"def kv_block() = {cm.kv.block};",
        f"def kv_blocks() = {cm.kv.blocks};",
        f"def kv_bytes_per_token() = {cm.kv.bytes_per_token};",
        "// engine limits (vLLM's max_num_seqs and max_num_batched_tokens; chunked prefill takes what the budget leaves)",
        f"def max_num_seqs() = {cm.max_num_seqs};",
        f"def max_batched_tokens() = {cm.max_batched_tokens};",
    ]
    return "\n".join(lines) + "\n"


def _model_for(profile_meta: dict, directory, model_config) -> Model:
    path = model_config or find_model_config(directory, profile_meta)
    if path is None:
        raise SqError(f"profile {directory}: no model config found beside it for `{profile_meta.get('model', '?')}`; "
                      "give one with --model-config", phase="settings")
    return load_model(path)


def from_profile(directory: str | os.PathLike, *, tp: int = 1, model_config=None, gpu: str | None = None,
                 memory_bytes: float | None = None, mem_util: float = MEM_UTIL,
                 max_num_seqs: int = MAX_NUM_SEQS, max_batched_tokens: int = MAX_BATCHED_TOKENS,
                 kv: KvPool | None = None, ep: int = 1, link: tuple[float, float] | None = None) -> CostModel:
    """Costs fitted to a measured profile (sq.costs.profile's layout). `ep`: the engines a MoE
    model's experts are spread over (vLLM's data parallelism with expert parallelism); `link`:
    (bytes per second, seconds per collective) of the GPUs' link, else the GPU table's."""
    base, _ = tp_folder(directory, tp)
    meta = read_meta(base)
    model = _model_for(meta, directory, model_config)
    tables = read_profile(directory, tp, model.experts, model.top_k, ep)
    hw = gpu or meta.get("hardware") or "?"
    row = _maybe_gpu(hw)
    if ep > 1 and model.moe:
        if row is None and link is None:
            raise SqError(f"profile {directory}: expert parallelism needs the link of GPU `{hw}`, not in sq's table",
                          phase="settings")
        link_from = "the run's" if link else "the GPU table's derated"
        link = link or datasheet_link(row)
        tables.moe = tables.moe + expert_exchange(tables.tokens, model, ep, link)
    if kv is None:
        if memory_bytes is None:
            if row is None:
                raise SqError(f"profile {directory}: GPU `{hw}` is not in sq's table; give its memory", phase="settings")
            memory_bytes = datasheet_bytes(row.mem_gb)
        kv = kv_pool(model, memory_bytes, mem_util, max_batched_tokens, max_num_seqs, "bf16", tp)
    roof = errors(tables, roofline_tables(model, row, "bf16", tp, like=tables)) if row else {}
    source = (f"measured profile {tables.meta['folder']} (vLLM {meta.get('vllm_version', '?')}, "
              f"{meta.get('gpu', hw)}, profiled {meta.get('profiled_at', '?')})")
    if ep > 1 and model.moe:
        source += (f"; experts spread over {ep} GPUs: each reads its share of the experts hit, plus a "
                   f"token exchange at {link_from} link speed ({link[0] / 1e9:g} GB/s, {link[1] * 1e6:g} us a collective)")
    return CostModel(model, hw, tp, meta.get("variant", "bf16"), fit_step(tables, model.layers), kv,
                     max_num_seqs, max_batched_tokens, source, roof)


def from_roofline(gpu: str, model_config, *, tp: int = 1, dtype: str = "bf16", mem_util: float = MEM_UTIL,
                  max_num_seqs: int = MAX_NUM_SEQS, max_batched_tokens: int = MAX_BATCHED_TOKENS,
                  efficiency: Efficiency = Efficiency(), ep: int = 1) -> CostModel:
    """Costs from a roofline of the model on a GPU of sq's table (no measurement)."""
    row = gpu_row(gpu)
    model = load_model(model_config)
    tables = roofline_tables(model, row, dtype, tp, efficiency, ep=ep if model.moe else 1)
    kv = kv_pool(model, datasheet_bytes(row.mem_gb), mem_util, max_batched_tokens, max_num_seqs, dtype, tp)
    source = (f"roofline of {row.name} ({row.source}); efficiencies: compute {efficiency.compute:g}, "
              f"memory {efficiency.memory:g}, launch {efficiency.launch * 1e6:g} us")
    return CostModel(model, row.name, tp, dtype, fit_step(tables, model.layers), kv, max_num_seqs,
                     max_batched_tokens, source)


def _maybe_gpu(name: str) -> Gpu | None:
    try:
        return gpu_row(name)
    except SqError:
        return None
