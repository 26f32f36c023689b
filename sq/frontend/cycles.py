"""`budget_left` cycles among step stages, refused at link time.

`budget_left(E)` evaluates E's `budget` and, for each resident, E's `chunk`
(spec 04 §4.5.11).  A stage whose budget or chunk reads `budget_left` of
itself — directly, through other stages' budgets and chunks, or through `def`s
(expanded before linking) — would evaluate it again without end (0.1.2 crashes
with a stack overflow).  Such a program is refused, naming the cycle.
"""
from __future__ import annotations

from typing import Any, Callable

from sq.frontend import ast as A

# The step options `budget_left` of a stage evaluates.
EVALUATED = ((A.Budget, "budget"), (A.Chunk, "chunk"))


def reads(kind: Any) -> list[tuple[str, str, A.Call]]:
    """(option, stage read, the call) for each `budget_left(S)` in a step stage's budget and chunk."""
    if not isinstance(kind, A.Step):
        return []
    out = []
    for cls, option in EVALUATED:
        opt = A.last_option(kind.options, cls)
        if opt is None:
            continue
        for e in A.subexpressions(opt.value):
            if isinstance(e, A.Call) and e.name == "budget_left" and len(e.args) == 1:
                target = e.args[0]
                if isinstance(target, (A.Name, A.Ref)):
                    out.append((option, target.name, e))
    return out


def check(stage_kinds: dict[str, Any], error: Callable[[str, Any], Exception]) -> None:
    """Raise `error(message, call)` for the first cycle found, in declaration order."""
    edges = {name: reads(kind) for name, kind in stage_kinds.items()}
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    for start in edges:
        if state.get(start):
            continue
        path: list[tuple[str, int]] = [(start, 0)]     # (stage, next edge to follow)
        via: list[tuple[str, A.Call]] = []             # the read that led to each later path entry
        state[start] = 1
        while path:
            name, k = path[-1]
            out = edges.get(name, [])
            if k == len(out):
                state[name] = 2
                path.pop()
                if via:
                    via.pop()
                continue
            path[-1] = (name, k + 1)
            option, target, call = out[k]
            if state.get(target) == 1:
                raise _cycle_error(path, via, (name, option, target, call), error)
            if target in edges and not state.get(target):
                state[target] = 1
                path.append((target, 0))
                via.append((option, call))


def _cycle_error(path, via, closing, error) -> Exception:
    name, option, target, call = closing
    stages = [p[0] for p in path]
    first = stages.index(target)
    if first == len(stages) - 1:
        return error(f"stage `{name}` reads its own `budget_left` in its {option}: `budget_left({name})` "
                     f"evaluates `{name}`'s budget and chunk, which would read it again without end", call)
    steps = []
    for i in range(first, len(stages) - 1):
        steps.append(f"`{stages[i]}` ({via[i][0]})")
    steps.append(f"`{name}` ({option})")
    cycle = " → ".join(steps + [f"`{target}`"])
    return error(f"a `budget_left` cycle among step stages: {cycle}: `budget_left(S)` evaluates S's "
                 "budget and chunk, so these stages would read each other without end", call)
