"""Running the recursive tree walks on programs thousands of levels deep.

0.1.2 accepts expressions thousands of levels deep (`1+1+…+1` is a
left-leaning tree of 5000 nodes, `((…(1)…))` runs to about 3000 parentheses).
The parser, the linker and the IR's own walks are recursive, so such a
program runs them again on a thread with a large stack and a high recursion
limit instead of failing with RecursionError.

Under a tight address-space limit (`ulimit -v`) the largest stack may not be
available: smaller ones are tried in turn, each with a recursion limit it can
hold, and only if no thread can start at all is the program refused.
"""
from __future__ import annotations

import sys
import threading

from sq.errors import SqError

# Stack sizes to try, largest first, and how many bytes of C stack one level of
# Python recursion is allowed (the walks recurse through a few C calls a level).
_STACKS = (512 << 20, 128 << 20, 32 << 20)
_BYTES_PER_LEVEL = 512
_lock = threading.Lock()


def run_deep(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, retried on a deep stack if it recursed too far."""
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        pass
    for size in _STACKS:
        outcome = _on_stack(size, fn, args, kwargs)
        if outcome is None:
            continue  # no thread with this stack: try a smaller one
        if "error" not in outcome:
            return outcome["value"]
        if isinstance(outcome["error"], RecursionError):
            raise SqError("the program nests too deeply to be read", phase="link") from None
        raise outcome["error"]
    raise SqError("the program nests too deeply to be read in the memory available "
                  "(no thread with a large enough stack could start)", phase="link")


def _on_stack(size: int, fn, args, kwargs) -> dict | None:
    """Run fn on a new thread with a `size`-byte stack: {"value": …} or
    {"error": …}; None if the thread could not start."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001  (handed back to the calling thread)
            outcome["error"] = e

    with _lock:
        old_size, old_limit = threading.stack_size(), sys.getrecursionlimit()
        try:
            threading.stack_size(size)
            sys.setrecursionlimit(max(old_limit, size // _BYTES_PER_LEVEL))
            # A daemon: Ctrl-C in the caller ends the process without waiting for it.
            worker = threading.Thread(target=target, name="sq-deep", daemon=True)
            try:
                worker.start()
            except (RuntimeError, MemoryError):  # "can't start new thread"
                return None
            worker.join()
        finally:
            threading.stack_size(old_size)
            sys.setrecursionlimit(old_limit)
    return outcome
