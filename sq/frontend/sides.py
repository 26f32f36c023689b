"""The two sides of a program after parsing (spec 02 §6): `request;` pairs the
workload's session with the `server`, `request NAME;` with a gateway queue,
and a statement def that says `turn;` or `request;` must not be handed what
that turn or request assigns.

Owned by the parser engineer (pyserq reports these as parse errors).
"""
from __future__ import annotations

from sq.frontend import ast
from sq.frontend.lexer import IDENT

# `turn;` gives every built-in attribute its next value.
BUILTINS = ("cached", "serial", "turn_no", "new", "out", "think", "more", "forced", "computed")


def assigned(stmts) -> set:
    return {s.name for s in ast.walk(stmts) if isinstance(s, (ast.Set, ast.Choose))}


def check_pairing(items, queues: dict, error) -> None:
    workload = next((i for i in items if isinstance(i, ast.Workload)), None)
    server = next((i for i in items if isinstance(i, ast.Server)), None)
    client = workload.session if workload is not None else None
    requests = [s for s in ast.walk(client.body) if isinstance(s, ast.Request)] if client else []
    for req in requests:
        if req.gateway is None:
            if server is None:
                raise error(req.span, "`request;` needs a `server` block; name a gateway with "
                            "`request NAME;`")
            continue
        where = req.gateway_span or req.span
        queue = queues.get(req.gateway)
        if queue is None:
            raise error(where, f"`request {req.gateway}`: no queue `{req.gateway}` is declared")
        if "gateway" not in queue.roles:
            raise error(where, f"`request {req.gateway}`: queue `{req.gateway}` does not play `gateway`")
    if server is not None:
        if client is None:
            raise error(server.span, "`server` needs a `session` inside `workload` that says `request;`")
        if not any(r.gateway is None for r in requests):
            raise error(server.span, "`server` is never requested: the workload's session has no "
                        "`request;`")
    elif client is not None and not requests:
        raise error(client.span, "a `session` inside `workload` is written against a `server` "
                    "block; name a gateway with `request NAME;`, or write `session` at top level")


def check_side_uses(items, side_uses, error) -> None:
    turn_sets = set(BUILTINS)
    server_sets: set = set()
    for item in items:
        if isinstance(item, ast.Workload):
            for wl_item in item.items:
                if isinstance(wl_item, ast.TurnBlock):
                    turn_sets |= assigned(wl_item.body)
        elif isinstance(item, ast.Server):
            server_sets |= assigned(item.body)
    for use, defn, args in side_uses:
        for flag, names, word in ((defn.has_turn, turn_sets, "turn"),
                                  (defn.has_request, server_sets, "request")):
            if not flag:
                continue
            for arg in args:
                for tok in arg:
                    if tok.kind == IDENT and tok.text in names:
                        raise error(use, f"an argument of `{defn.name}` reads `{tok.text}`, which its "
                                    f"`{word};` assigns: it would read the new `{tok.text}`, not this one",
                                    ("help: `set` the value under another name first and pass that",))
