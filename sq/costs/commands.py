"""`python -m sq costs` and `python -m sq validate` (registered in sq/cli.py's command table)."""
from __future__ import annotations

import argparse
import json

from sq.errors import SqError


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, found `{text}`")
    return value


def add_parsers(sub) -> None:
    c = sub.add_parser("costs", help="print a serQ library of step costs and limits for a GPU and a model",
                       description="From a measured profile (--profile DIR) or a roofline of a GPU of sq's "
                                   "table and a model config (--gpu NAME --model CONFIG.json).")
    c.add_argument("--profile", metavar="DIR", help="a profile folder (LLMServingSim's profiles/ layout)")
    c.add_argument("--gpu", metavar="NAME", help="a GPU of sq's table (A100, H100, H200, B200, L40S, L4, "
                                                 "RTX4090, RTXPRO6000)")
    c.add_argument("--model", metavar="CONFIG.json", help="the model's Hugging Face config")
    c.add_argument("--tp", type=_positive_int, default=1, help="tensor-parallel degree (default 1)")
    c.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp8"), help="weights and KV (default bf16)")
    c.add_argument("--mem-util", type=float, default=0.9, help="vLLM's gpu_memory_utilization (default 0.9)")
    c.add_argument("--max-num-seqs", type=_positive_int, default=256)
    c.add_argument("--max-batched-tokens", type=_positive_int, default=2048)
    c.add_argument("--skew", action="store_true",
                   help="price decodes of unequal contexts with the profile's skew fit (reads sq's "
                        "`kv_decode_max`: pyserq 0.1.2 cannot run the library)")

    v = sub.add_parser("validate", help="replay a measured vLLM run with costs from a profile; compare latencies")
    v.add_argument("--run", required=True, metavar="RUN_DIR", help="requests.jsonl, meta.json, config.json, timeseries.csv")
    v.add_argument("--profile", metavar="PROFILE_DIR", help="the measured profile of the run's GPU and model")
    v.add_argument("--roofline", action="store_true",
                   help="costs from a roofline of the run's GPU (sq's table) and --model-config instead of a profile")
    v.add_argument("--model-config", metavar="FILE", help="the model's config (default: found beside the profile)")
    v.add_argument("--no-capacity", action="store_true", help="skip the capacity search (about 10 more replays)")
    v.add_argument("--json", action="store_true", help="print the comparison as JSON")


def cmd_costs(args) -> int:
    from sq.costs import from_profile, from_roofline
    if args.profile and (args.gpu or args.model) and not args.model:
        raise SqError("costs: --gpu goes with --model (a roofline), not with --profile", phase="settings")
    if args.profile:
        cm = from_profile(args.profile, tp=args.tp, model_config=args.model, gpu=args.gpu, mem_util=args.mem_util,
                          max_num_seqs=args.max_num_seqs, max_batched_tokens=args.max_batched_tokens)
    elif args.gpu and args.model:
        cm = from_roofline(args.gpu, args.model, tp=args.tp, dtype=args.dtype, mem_util=args.mem_util,
                           max_num_seqs=args.max_num_seqs, max_batched_tokens=args.max_batched_tokens)
    else:
        raise SqError("costs: give --profile DIR, or --gpu NAME and --model CONFIG.json", phase="settings")
    print(cm.library(skew=args.skew), end="")
    return 0


def cmd_validate(args) -> int:
    from sq.costs.validate import validate
    if bool(args.profile) == bool(args.roofline):
        raise SqError("validate: give --profile DIR or --roofline (with --model-config)", phase="settings")
    v = validate(args.run, args.profile, args.model_config, with_capacity=not args.no_capacity,
                 roofline=args.roofline)
    print(json.dumps(v.to_json(), indent=2) if args.json else v.text())
    return 0
