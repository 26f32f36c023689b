"""Deep trees: the one place that raises Python's recursion limit, and the deep-stack worker.

0.1.2 accepts expressions thousands of levels deep (`1+1+…+1` is a left-leaning
tree of 5000 nodes). The tree walks of the front end, the IR and lowering are
recursive, so such a program runs them again on a thread with a large stack and a
high recursion limit (`run_deep`) instead of failing with RecursionError.

The recursion limit is one number for the whole process, so it is raised only
through `recursion_limit`: the first caller in saves it, every caller raises it to
what it needs, and the last one out puts the saved value back, whatever the
threads' order (two threads lowering at once leave the limit as they found it).
"""
from __future__ import annotations

import contextlib
import sys
import threading

from sq.errors import SqError

_DEEP_STACK = 512 * 1024 * 1024
_DEEP_LIMIT = 1_000_000

_limit_lock = threading.Lock()
_limit_holders = 0
_limit_saved = 0
_deep_lock = threading.Lock()   # the stack size of new threads is process-wide too


@contextlib.contextmanager
def recursion_limit(at_least: int):
    """Run the body with the recursion limit at `at_least` or above; restored when the last holder leaves."""
    global _limit_holders, _limit_saved
    with _limit_lock:
        if _limit_holders == 0:
            _limit_saved = sys.getrecursionlimit()
        _limit_holders += 1
        if sys.getrecursionlimit() < at_least:
            sys.setrecursionlimit(at_least)
    try:
        yield
    finally:
        with _limit_lock:
            _limit_holders -= 1
            if _limit_holders == 0:
                sys.setrecursionlimit(_limit_saved)


def run_deep(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, retried on a deep stack if it recursed too far."""
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        pass
    result: dict = {}

    def target() -> None:
        try:
            with recursion_limit(_DEEP_LIMIT):
                result["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001  (handed back to the calling thread)
            result["error"] = e
    with _deep_lock:
        old_size = threading.stack_size()
        threading.stack_size(_DEEP_STACK)
        try:
            worker = threading.Thread(target=target, name="sq-deep")
            worker.start()
        finally:
            threading.stack_size(old_size)
    worker.join()
    if "error" in result:
        if isinstance(result["error"], RecursionError):
            raise SqError("the program nests too deeply to be read", phase="link") from None
        raise result["error"]
    return result["value"]
