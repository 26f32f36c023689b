"""A model's shape from its Hugging Face config: what a roofline and a KV pool need.

Per TP rank: attention and KV heads, the MLP and the experts are split across
the `tp` GPUs (KV heads are replicated when there are fewer than `tp`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from sq.errors import SqError

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int          # dense MLP width (0 for an all-MoE model)
    vocab: int
    experts: int = 0           # routed experts (0: dense)
    top_k: int = 0
    expert_intermediate: int = 0
    tied_embeddings: bool = False

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def kv_bytes_per_token(self, dtype: str = "bf16", tp: int = 1) -> int:
        """K and V of every layer for one token, on one of `tp` ranks."""
        kv_heads = max(1, self.kv_heads // tp)
        return 2 * self.layers * kv_heads * self.head_dim * DTYPE_BYTES[dtype]

    def attention_params(self) -> int:
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return self.hidden * (q + 2 * kv) + q * self.hidden

    def mlp_params(self) -> int:
        """All MLP weights of one layer (every expert of a MoE layer, and its router)."""
        if self.moe:
            return self.experts * 3 * self.hidden * self.expert_intermediate + self.hidden * self.experts
        return 3 * self.hidden * self.intermediate

    def active_mlp_params(self) -> int:
        """The MLP weights one token goes through."""
        if self.moe:
            return self.top_k * 3 * self.hidden * self.expert_intermediate + self.hidden * self.experts
        return self.mlp_params()

    def weight_bytes(self, dtype: str = "bf16", tp: int = 1) -> int:
        embed = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        params = self.layers * (self.attention_params() + self.mlp_params()) + embed
        return params * DTYPE_BYTES[dtype] // tp


def _need(cfg: dict, key: str, path: str):
    if key not in cfg:
        raise SqError(f"model config {path}: no `{key}` (a Hugging Face config.json is expected)", phase="settings")
    return cfg[key]


def load_model(path: str | os.PathLike) -> Model:
    """A `Model` from a Hugging Face config.json (Llama, Qwen3, Qwen3-MoE, Mixtral, Phi-MoE shapes)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except json.JSONDecodeError as err:
        raise SqError(f"model config {path}: not JSON ({err})", phase="settings") from None
    cfg = cfg.get("text_config", cfg)
    hidden, heads = int(_need(cfg, "hidden_size", path)), int(_need(cfg, "num_attention_heads", path))
    experts = int(cfg.get("num_experts") or cfg.get("num_local_experts") or 0)
    moe_width = int(cfg.get("moe_intermediate_size") or (cfg.get("intermediate_size", 0) if experts else 0))
    return Model(
        name=os.path.splitext(os.path.basename(path))[0],
        layers=int(_need(cfg, "num_hidden_layers", path)), hidden=hidden, heads=heads,
        kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        intermediate=0 if experts else int(_need(cfg, "intermediate_size", path)),
        vocab=int(_need(cfg, "vocab_size", path)),
        experts=experts, top_k=int(cfg.get("num_experts_per_tok") or 0), expert_intermediate=moe_width,
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)))
