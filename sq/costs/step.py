"""A step stage's `cost` fitted to a step's op classes, in the terms the stage exposes.

A vLLM step over `tokens` scheduled tokens costs
    tokens part    every layer's dense ops (and MoE) plus the prologue/head, by tokens:
                   a continuous piecewise-linear curve (flat while the weights'
                   read dominates, then linear in tokens), knots chosen by the fit;
    attention      per layer: a launch, a prefill part (chunk, chunk x context as
                   the stage's `attention`, prefill KV as `kv_prefill`) and a
                   decode part (`decoders`, their KV as `kv_decode`), times the layers;
    per sequence   lm_head and sampler over the sequences that get a token,
                   `decoders + (prefilled > 0 ? 1 : 0)` (one prefill chunk a step,
                   as vLLM runs with one partial prefill), piecewise linear.
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

    def seconds(self, tokens, prefilled, attention, kv_prefill, decoders, kv_decode) -> np.ndarray:
        """The cost as the step stage would evaluate it (numpy, elementwise)."""
        tokens, prefilled, decoders = (np.asarray(v, dtype=float) for v in (tokens, prefilled, decoders))
        att = terms(prefilled, attention, kv_prefill, decoders, kv_decode)
        seqs = decoders + (prefilled > 0)
        return (hinge_basis(tokens, self.token_knots) @ self.tokens.coef
                + self.layers * (att @ self.attention.coef)
                + hinge_basis(seqs, self.sequence_knots) @ self.sequences.coef)


def fit_step(tables: OpTables, layers: int) -> StepCost:
    by_tokens = layers * tables.layer_tokens() + tables.once
    tok_fit, tok_knots = hinge_fit(tables.tokens, by_tokens, TOKEN_KNOTS)
    rows = attention_rows(tables)
    att_fit = wls(attention_columns(rows), rows[:, 4], tuple(n for n, _ in ATTENTION_TERMS))
    seq_fit, seq_knots = hinge_fit(tables.sequences, tables.per_sequence, SEQUENCE_KNOTS)
    return StepCost(layers, tok_fit, tok_knots, att_fit, seq_fit, seq_knots)
