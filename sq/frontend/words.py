"""The language's fixed vocabulary, as the parser needs it (spec 01 §1.3, §6.3, §7.6).

Owned by the parser engineer (a helper of parser.py).
"""
from __future__ import annotations

# The 88 words of 0.1.2: refused as the name of a `def` or a `def` parameter.
KEYWORDS = frozenset("""
admission admit arrivals arrive at batch bernoulli block bottleneck branch
budget by cache cap choose chunk closed cost decode def delay drop else end
evict exclusive fifo first fits from gauge grow growing hidden hold horizon
in init latency lease let lifo link load loop lru mark maxmin memory nic
none observe on ordered poisson pool preempt prefill ps pull queue release
renewal request reserve reuse run seed serve server session set share spill
stage step sum to tool trace transfer turn use via warmup when with workload
""".split())

# 0.1.2's pure functions, the words its `def`s may not take
DIALECT_PURE_FUNCTIONS = {"min": 2, "max": 2, "pow": 2, "abs": 1, "floor": 1, "ceil": 1,
                          "sqrt": 1, "exp": 1, "ln": 1}
# An extension (docs/differences.md): `sin`, `cos` and the constant `pi`, for periodic rates
# (`arrive poisson(5 + 3 * sin(2 * pi * now / 86400))`). They are not words of the language: a
# 0.1.2 program that defines `sin` or `pi` itself keeps its own (a `def` expands first, a `let` is
# looked up first).
PURE_FUNCTIONS = {**DIALECT_PURE_FUNCTIONS, "sin": 1, "cos": 1}
NAMED_NUMBERS = {"pi": 3.141592653589793}    # read where no `let` of the name is
STATE_FUNCTIONS = frozenset("""queue busy work est_lambda est_rho est_wait price used free
holders queued cachedin budget_left""".split())
FUNCTIONS = frozenset(DIALECT_PURE_FUNCTIONS) | STATE_FUNCTIONS | {"blocksize"}
DISTRIBUTIONS = frozenset("exp det uniform erlang h2 bernoulli".split())

CONTEXT_VARIABLES = frozenset("""now waited size age last waiting present tokens decoders
prefilled residents kv_decode kv_prefill attention decoding admission remaining
kv_decode_max""".split())

# What a retired word says wherever a name is defined with it.
RETIRED = {
    "enter": "`enter` is now `hold`: `hold P (u) … at admission (x = e) { … } cache (ℓ);`",
    "keep": "`keep` is now `cache`",
    "where": "`where x = e` is now `at admission (x = e)`",
    "fit": "`fit` is gone: the pools of a `hold` are the condition",
}

ADMIT_STATEMENT = ("`admit if … fit where x = e { … } keep (ℓ)` is now `hold … at admission "
                   "(x = e) { … } cache (ℓ)` (the pool option `admit via` is unchanged)")


def retired_name(word: str, statement_words: bool = False) -> str | None:
    """The message for defining a name with a retired word, or None. With
    `statement_words`, `admit` (retired as a statement) counts too."""
    hint = RETIRED.get(word)
    if hint is None and statement_words and word == "admit":
        hint = ADMIT_STATEMENT
    return None if hint is None else f"`{word}` is a retired word and names nothing: {hint}"


QUEUE_ROLES = ("gateway", "prefill", "decode", "link")
ROLE_VERB = {"gateway": "route", "prefill": "prefill", "decode": "decode", "link": "transfer"}
SERVING_WORDS = frozenset({"gateway", "prefill", "decode", "link", "transfer", "tool"})
