"""Cutting serQ programs at token seams, and words to splice in: shared by the mutation tests
(tests/frontend/test_fuzz.py, tests/frontend/test_grammar.py)."""
from __future__ import annotations

import re

# Tokens roughly as serQ lexes them; good enough to cut programs at token seams.
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"[^"]*"|\.?\d[\w.]*|[^\W\d]\w*|&&|\|\||<=|>=|==|!=|\S', re.S)

VOCAB = [
    # words of the language and names that are special somewhere
    "let", "def", "use", "pool", "stage", "queue", "share", "workload", "session", "server", "gauge", "run",
    "hold", "grow", "drop", "release", "load", "branch", "with", "else", "loop", "choose", "in", "by",
    "end", "turn", "request", "set", "observe", "mark", "self", "prefill", "decode", "tool", "transfer",
    "from", "to", "on", "growing", "cache", "lease", "reserve", "reuse", "at", "admission", "step", "fifo",
    "ps", "delay", "cap", "block", "evict", "preempt", "admit", "via", "spill", "when", "latency", "pull",
    "maxmin", "bottleneck", "poisson", "renewal", "closed", "batch", "none", "trace", "ordered", "hidden",
    "init", "sum", "min", "max", "inf", "now", "present", "tokens", "used", "blocksize", "keep", "enter",
    # punctuation and numbers
    "{", "}", "(", ")", "[", "]", ",", ";", ":", ".", "=", "~", "?", "+", "-", "*", "/", "^", "<", "<=",
    ">", ">=", "==", "!=", "&&", "||", "!", "0", "1", "-1", "0.5", "1e3", '"x.csv"', "/*", "*/", "//",
]
