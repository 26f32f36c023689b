"""A step stage's `cost` fitted to a step's op classes, in the terms the stage exposes.

A vLLM step over `tokens` scheduled tokens costs
    tokens part    every layer's dense ops plus the prologue/head, by tokens:
                   a continuous piecewise-linear curve (flat while the weights'
                   read dominates, then linear in tokens), knots chosen by the fit;
    experts part   a MoE model's expert layers (and their token exchange under
                   expert parallelism), every layer, by the tokens of one engine:
                   kept apart from the tokens part because data-parallel engines
                   in lockstep run their dense ops on their own tokens but their
                   experts on everyone's (sq.costs.validate);
    attention      per layer: a launch, a prefill part (chunk, chunk x context as
                   the stage's `attention`, prefill KV as `kv_prefill`) and a
                   decode part (`decoders`, their KV as `kv_decode`), times the layers;
    per sequence   lm_head and sampler over the sequences that get a token,
                   `decoders + (prefilled > 0 ? 1 : 0)` (one prefill chunk a step,
                   as vLLM runs with one partial prefill), piecewise linear;
    skew           the profile measures attention with every decode at one context;
                   decodes of unequal contexts cost more than at their mean: a share
                   alpha of the way to all at the longest (`kv_decode_max`), alpha
                   the profiler's own (skew_fit.csv), pooled by whether the step has
                   a prefill and by its decodes' bucket.
Each part is fitted on its own rows by weighted least squares (sq.costs.fit).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sq.costs.fit import Fit, hinge_basis, hinge_fit, wls
from sq.costs.profile import OpTables

TOKEN_KNOTS = (16, 32, 64, 128, 256, 512, 1024)
SEQUENCE_KNOTS = (8, 16, 32, 64, 128, 192)
# the attention terms, as the library's cm_attention_cost(pf, att, kvp, nd, kvd) writes them from the
# stage's prefilled, attention, kv_prefill, decoders and kv_decode
ATTENTION_TERMS = (
    ("launch", "1"),
    ("prefill", "(pf > 0 ? 1 : 0)"),
    ("prefill_token", "pf"),
    ("prefill_pair", "att"),                # chunk x (context before it + chunk/2)
    ("prefill_kv", "kvp"),
    ("decode", "(nd > 0 ? 1 : 0)"),
    ("decode_seq", "nd"),
    ("decode_kv", "kvd"),
    # decodes batched with a prefill chunk run in the varlen prefill kernel, slower per token
    ("mixed_decode_seq", "(pf > 0 ? nd : 0)"),
    ("mixed_decode_kv", "(pf > 0 ? kvd : 0)"),
)


def attention_columns(rows: np.ndarray) -> np.ndarray:
    """The attention terms of profile rows (prefill_chunk, kv_prefill, n_decode, kv_decode)."""
    pc, kp, nd, kvd = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    return terms(pc, pc * (kp + pc / 2), np.where(pc > 0, kp + pc, 0.0), nd, nd * kvd)


def terms(prefilled, attention, kv_prefill, decoders, kv_decode) -> np.ndarray:
    """ATTENTION_TERMS' columns from the stage's cost variables (numpy arrays)."""
    pc, nd = np.asarray(prefilled, dtype=float), np.asarray(decoders, dtype=float)
    kvd, mixed = np.asarray(kv_decode, dtype=float), (pc > 0).astype(float)
    return np.column_stack([np.ones_like(pc), mixed, pc, np.asarray(attention, dtype=float),
                            np.asarray(kv_prefill, dtype=float), nd > 0, nd, kvd,
                            mixed * nd, mixed * kvd]).astype(float)


def attention_rows(tables: OpTables) -> np.ndarray:
    a = tables.attention
    return a[(a[:, 0] > 0) | (a[:, 2] > 0)]


@dataclass(frozen=True)
class StepCost:
    layers: int
    tokens: Fit            # seconds of a whole step by tokens (all layers' dense/MoE ops, prologue, head)
    token_knots: tuple
    attention: Fit         # seconds of ONE layer's attention
    sequences: Fit         # seconds of the per-sequence ops by sequences
    sequence_knots: tuple
    experts: Fit | None = None     # seconds of all MoE layers by one engine's tokens (MoE models)
    expert_knots: tuple = ()
    skew_bounds: tuple = ()        # upper bounds of the decode-count buckets of the skew alphas
    skew_decode: tuple = ()        # alpha per bucket, decode-only steps
    skew_mixed: tuple = ()         # alpha per bucket, steps with a prefill chunk

    def decode_slope(self, prefilled) -> np.ndarray:
        """One layer's attention seconds per token of decode context (beside a prefill or not)."""
        c = dict(zip(self.attention.names, self.attention.coef))
        return c["decode_kv"] + np.where(np.asarray(prefilled, dtype=float) > 0, c["mixed_decode_kv"], 0.0)

    def skew_alpha(self, prefilled, decoders) -> np.ndarray:
        prefilled, decoders = np.asarray(prefilled, dtype=float), np.asarray(decoders, dtype=float)
        alpha = np.zeros(np.broadcast(prefilled, decoders).shape)
        for bound, dec, mix in reversed(tuple(zip(self.skew_bounds, self.skew_decode, self.skew_mixed))):
            alpha = np.where(decoders <= bound, np.where(prefilled > 0, mix, dec), alpha)
        return alpha

    def seconds(self, tokens, prefilled, attention, kv_prefill, decoders, kv_decode,
                kv_decode_max=None) -> np.ndarray:
        """The cost as the step stage would evaluate it (numpy, elementwise); without
        `kv_decode_max`, the decodes' contexts are taken as equal."""
        tokens, prefilled, decoders = (np.asarray(v, dtype=float) for v in (tokens, prefilled, decoders))
        att = terms(prefilled, attention, kv_prefill, decoders, kv_decode)
        skew = 0.0
        if kv_decode_max is not None and self.skew_bounds:
            skew = self.layers * self.skew_alpha(prefilled, decoders) * self.decode_slope(prefilled) * np.maximum(
                0.0, decoders * np.asarray(kv_decode_max, dtype=float) - np.asarray(kv_decode, dtype=float))
        seqs = decoders + (prefilled > 0)
        experts = 0.0 if self.experts is None else hinge_basis(tokens, self.expert_knots) @ self.experts.coef
        return (hinge_basis(tokens, self.token_knots) @ self.tokens.coef + experts
                + self.layers * (att @ self.attention.coef) + skew
                + hinge_basis(seqs, self.sequence_knots) @ self.sequences.coef)


def fit_step(tables: OpTables, layers: int) -> StepCost:
    by_tokens = layers * sum(tables.dense.values()) + tables.once
    tok_fit, tok_knots = hinge_fit(tables.tokens, by_tokens, TOKEN_KNOTS)
    rows = attention_rows(tables)
    att_fit = wls(attention_columns(rows), rows[:, 4], tuple(n for n, _ in ATTENTION_TERMS))
    seq_fit, seq_knots = hinge_fit(tables.sequences, tables.per_sequence, SEQUENCE_KNOTS)
    moe_fit, moe_knots = None, ()
    if tables.moe is not None:
        moe_fit, moe_knots = hinge_fit(tables.tokens, layers * tables.moe, TOKEN_KNOTS)
    return StepCost(layers, tok_fit, tok_knots, att_fit, seq_fit, seq_knots, moe_fit, moe_knots,
                    *skew_alphas(tables.skew))


def skew_alphas(skew: np.ndarray | None) -> tuple[tuple, tuple, tuple]:
    """(bucket bounds, alpha of decode-only steps, alpha of steps with a prefill) from skew_fit.csv's
    rows: the profiler's alphas pooled over its other axes (skew rate, longest context, prefill
    context and chunk), weighted by the samples behind each; a bucket one kind of step lacks
    takes the alpha of the nearest smaller bucket it has (0 if none)."""
    if skew is None or not len(skew):
        return (), (), ()
    bounds = tuple(float(b) for b in np.unique(skew[:, 1]))
    kinds = []
    for rows in (skew[skew[:, 0] == 0], skew[skew[:, 0] > 0]):
        alphas, last = [], 0.0
        for b in bounds:
            here = rows[rows[:, 1] == b]
            if len(here) and here[:, 3].sum() > 0:
                last = float(np.average(here[:, 2], weights=here[:, 3]))
            alphas.append(last)
        kinds.append(tuple(alphas))
    return bounds, kinds[0], kinds[1]
