"""Per-operation latencies in the layout of LLMServingSim's `profiles/` (vLLM, one GPU).

A profile directory is `<hw>/<org>/<model>/<dtype>/` with a `meta.yaml` and
one `tpN/` folder per TP degree holding
  dense.csv         layer,tokens,time_us        (one decoder layer's dense ops)
  attention.csv     prefill_chunk,kv_prefill,n_decode,kv_decode,time_us
                    (one layer; `kv_decode` is the context of *each* decode)
  per_sequence.csv  layer,sequences,time_us     (lm_head, sampler: once a step)
  moe.csv           tokens,activated_experts,time_us   (one MoE layer; MoE models)
  skew_fit.csv      pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha,n_samples
                    (optional) how much slower a step whose decodes have unequal
                    contexts is than one at their mean: its attention moves a
                    share `alpha` of the way from the mean context's time to the
                    longest context's, fitted by the profiler per bucket
The profiler runs the model cut to one layer, so a step is: every layer's
dense ops, attention and MLP/MoE times the model's layer count, plus the
prologue (`embedding`) and the head (`final_layernorm`, lm_head, sampler).
Each decoder layer normalises twice (`layernorm` before attention and before
the MLP). Times are converted to seconds here.
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sq.errors import SqError

ONCE_PER_STEP = ("embedding", "final_layernorm")      # prologue and head, by tokens
TWICE_PER_LAYER = ("layernorm",)                       # before attention and before the MLP
US = 1e-6


@dataclass
class OpTables:
    """The op classes a step is made of, each as measured (or as a roofline predicts it)."""
    tokens: np.ndarray                 # the token grid of the by-token curves
    dense: dict[str, np.ndarray]       # per-layer dense op -> seconds at `tokens` (layernorm counted twice)
    once: np.ndarray                   # once-a-step ops by tokens (embedding, final norm), seconds
    moe: np.ndarray | None             # one MoE layer by tokens (experts hit as routing spreads; with expert
                                       # parallelism, the token exchange too), seconds
    attention: np.ndarray              # rows: prefill_chunk, kv_prefill, n_decode, kv_decode, seconds
    sequences: np.ndarray              # the grid of per-sequence ops
    per_sequence: np.ndarray           # lm_head + sampler at `sequences`, seconds
    moe_table: np.ndarray | None = None   # rows: tokens, activated experts, seconds (as measured)
    skew: np.ndarray | None = None        # rows: prefill chunk, decodes' upper bound, alpha, samples (skew_fit.csv)
    meta: dict = field(default_factory=dict)


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise SqError(f"profile: no {path.name} in {path.parent}", phase="settings") from None
    if not rows:
        raise SqError(f"profile: {path} is empty", phase="settings")
    return rows[0], rows[1:]


def _numbers(path: Path, rows: list[list[str]], columns: slice) -> np.ndarray:
    try:
        return np.array([[float(v) for v in r[columns]] for r in rows if r], dtype=float)
    except ValueError as err:
        raise SqError(f"profile: {path}: {err}", phase="settings") from None


def _by_name(path: Path, rows: list[list[str]]) -> dict[str, list[tuple[float, float]]]:
    """`name,x,time_us` rows -> {name: [(x, seconds)]}."""
    out: dict[str, list[tuple[float, float]]] = {}
    for number, r in enumerate(rows, 2):
        if not r:
            continue
        try:
            out.setdefault(r[0], []).append((float(r[1]), float(r[2]) * US))
        except (IndexError, ValueError):
            raise SqError(f"profile: {path}:{number}: expected NAME,NUMBER,TIME_US, found `{','.join(r)}`",
                          phase="settings") from None
    if not out:
        raise SqError(f"profile: {path} has no rows", phase="settings")
    return out


def read_meta(directory: Path) -> dict:
    """The top-level `key: value` lines of meta.yaml (enough for model, hardware, vLLM version)."""
    meta = {}
    path = directory / "meta.yaml"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line and not line[0].isspace() and ":" in line and not line.startswith("#"):
                key, _, value = line.partition(":")
                meta[key.strip()] = value.strip().strip("'\"")
    return meta


def tp_folder(directory: str | os.PathLike, tp: int) -> tuple[Path, Path]:
    """(the profile's dtype folder, its tpN folder). `directory` may name either."""
    d = Path(directory)
    if not d.is_dir():
        raise SqError(f"profile: {d} is not a directory", phase="settings")
    if (d / "dense.csv").exists():
        return d.parent, d
    sub = d / f"tp{tp}"
    if not sub.is_dir():
        have = sorted(p.name for p in d.glob("tp*"))
        raise SqError(f"profile: {d} has no tp{tp}/ folder" + (f" (it has {', '.join(have)})" if have else
                      " and no dense.csv"), phase="settings")
    return d, sub


def expected_experts(tokens: np.ndarray, experts: int, top_k: int, ep: int = 1) -> np.ndarray:
    """Experts one GPU holds that `tokens` tokens (per engine) hit, each token routed to `top_k`
    of `experts`, routing spread evenly. With expert parallelism over `ep` data-parallel engines a
    GPU holds experts/ep of them and serves the tokens of all `ep` engines."""
    tokens = np.asarray(tokens, dtype=float) * ep
    return experts / ep * (1.0 - (1.0 - top_k / experts) ** tokens)


def _moe_curve(table: np.ndarray, tokens: np.ndarray, experts: int, top_k: int, ep: int = 1) -> np.ndarray:
    """One MoE layer's time at `tokens`: at each measured token count, the time interpolated at
    the expected number of experts hit; between token counts, linear in log(tokens). (Under
    expert parallelism a GPU computes about as many token-expert pairs as without: `tokens`.)"""
    ts = np.unique(table[:, 0])
    at = []
    for t in ts:
        rows = table[table[:, 0] == t]
        rows = rows[np.argsort(rows[:, 1])]
        at.append(np.interp(expected_experts(t, experts, top_k, ep), rows[:, 1], rows[:, 2]))
    return np.interp(np.log(tokens), np.log(ts), np.array(at))


def read_profile(directory: str | os.PathLike, tp: int = 1, experts: int = 0, top_k: int = 0,
                 ep: int = 1) -> OpTables:
    base, folder = tp_folder(directory, tp)
    by_op = _by_name(folder / "dense.csv", _read_csv(folder / "dense.csv")[1])
    tokens = np.array(sorted({t for op in by_op.values() for t, _ in op}))
    curve = {name: np.interp(tokens, *np.array(sorted(v)).T) for name, v in by_op.items()}
    once = sum((curve.pop(name) for name in ONCE_PER_STEP if name in curve), np.zeros_like(tokens))
    for name in TWICE_PER_LAYER:
        if name in curve:
            curve[name] = 2 * curve[name]

    _, att = _read_csv(folder / "attention.csv")
    attention = _numbers(folder / "attention.csv", att, slice(0, 5))
    attention[:, 4] *= US

    per = _by_name(folder / "per_sequence.csv", _read_csv(folder / "per_sequence.csv")[1])
    sequences = np.array(sorted({s for op in per.values() for s, _ in op}))
    per_sequence = sum(np.interp(sequences, *np.array(sorted(v)).T) for v in per.values())

    moe = moe_table = None
    if (folder / "moe.csv").exists():
        _, m = _read_csv(folder / "moe.csv")
        moe_table = _numbers(folder / "moe.csv", m, slice(0, 3))
        moe_table[:, 2] *= US
        if not experts:
            raise SqError(f"profile: {folder} has moe.csv but the model config names no experts", phase="settings")
        moe = _moe_curve(moe_table, tokens, experts, top_k, ep)
    meta = read_meta(base)
    meta["folder"] = str(folder)
    skew = _read_skew(folder / "skew_fit.csv") if _skew_enabled(base / "meta.yaml") else None
    return OpTables(tokens, curve, once, moe, attention, sequences, per_sequence, moe_table, skew=skew, meta=meta)


def _skew_enabled(path: Path) -> bool:
    """False when meta.yaml's `skew_fit:` block says `enabled: false` (the profiler's word that
    its skew fit is not to be used; LLMServingSim then applies none either)."""
    if not path.exists():
        return True
    block = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace():
            block = line.startswith("skew_fit:")
        elif block and line.strip().replace(" ", "") == "enabled:false":
            return False
    return True


def _decodes_bound(path: Path, label: str) -> float:
    """`n<=K` -> K, `n>K` -> infinity (skew_fit.csv's decode buckets)."""
    for prefix, upper in (("n<=", None), ("n>", np.inf)):
        if label.startswith(prefix):
            try:
                bound = float(label[len(prefix):])
            except ValueError:
                break
            return bound if upper is None else upper
    raise SqError(f"profile: {path}: decode bucket `{label}` is not n<=K or n>K", phase="settings")


def _read_skew(path: Path) -> np.ndarray | None:
    """skew_fit.csv's buckets as rows (prefill chunk, decodes' upper bound, alpha, samples), if any."""
    if not path.exists():
        return None
    header, rows = _read_csv(path)
    try:
        at = [header.index(c) for c in ("pc", "n_label", "alpha", "n_samples")]
        out = [(float(r[at[0]]), _decodes_bound(path, r[at[1]]), float(r[at[2]]), float(r[at[3]]))
               for r in rows if r]
    except (ValueError, IndexError):
        raise SqError(f"profile: {path}: expected columns pc, n_label, alpha, n_samples with numbers",
                      phase="settings") from None
    return np.array(out, dtype=float) if out else None


def find_model_config(directory: str | os.PathLike, meta: dict) -> Path | None:
    """`model-configs/<org>/<model>.json` beside the `profiles/` tree the profile sits in, if any."""
    model = meta.get("model", "")
    if not model:
        return None
    for parent in Path(directory).resolve().parents:
        candidate = parent / "model-configs" / f"{model}.json"
        if candidate.exists():
            return candidate
    return None
