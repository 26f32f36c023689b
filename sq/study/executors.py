"""Where a study's runs happen: serially, on threads, on spawned processes, on any
`concurrent.futures.Executor` or on a Dask `distributed.Client`.

`Executor(kind, jobs).run(fn, tasks, todo, shared)` calls the picklable top-level `fn` on
`tasks[i]` for each `i` in `todo` and yields `(i, result)` as runs finish; the caller
places results by `i`, so their order never depends on the executor. `shared` ({digest:
IR text}, `Plan.shared`) is what the tasks name by reference (`PointIR`): it goes to each
worker once -- the worker processes' initializer, Dask's `scatter` (one future per point) --
and only to a `concurrent.futures.Executor` of the caller's, which has no per-worker start,
beside each task (`attach`).
"""
from __future__ import annotations

import os
import sys
import types
from contextlib import contextmanager

from sq._support._optional import require
from sq.errors import SqError
from sq._support.settings import is_count
from sq.study.plan import attach, ship

KINDS = ("serial", "threads", "processes")


class Executor:
    """Runs tasks and yields (index, record) as they finish."""

    def __init__(self, executor, jobs, who: str = "sweep"):
        if jobs is not None and not is_count(jobs):
            raise SqError(f"{who}: jobs must be a positive whole number, found {jobs!r}", phase="settings")
        self.jobs = int(jobs) if jobs is not None else os.cpu_count() or 1
        self.kind = "processes" if executor is None else executor
        if isinstance(self.kind, str):
            if self.kind not in KINDS:
                raise SqError(f"{who}: unknown executor `{self.kind}`", phase="settings",
                              notes=(f"help: {', '.join(KINDS)}, a concurrent.futures.Executor "
                                     "or a dask distributed.Client",))
        elif not _is_dask(self.kind) and not _is_futures(self.kind):
            raise SqError(f"{who}: executor {self.kind!r} is neither a concurrent.futures.Executor "
                          "nor a dask distributed.Client", phase="settings")

    def run(self, fn, tasks: list, todo: list[int], shared: dict | None = None):
        if not todo:
            return
        if self.kind == "serial" or (isinstance(self.kind, str) and (self.jobs == 1 or len(todo) == 1)):
            for i in todo:
                yield i, fn(tasks[i])
            return
        workers = min(self.jobs, len(todo))
        if self.kind == "processes":
            yield from _processes(fn, tasks, todo, workers, shared)
        elif self.kind == "threads":
            import concurrent.futures as cf  # noqa: PLC0415

            with owned(cf.ThreadPoolExecutor(workers)) as pool:
                yield from _futures(fn, pool, tasks, todo)
        elif _is_dask(self.kind):
            yield from _dask(fn, self.kind, tasks, todo, shared)
        else:
            yield from _futures(fn, self.kind, tasks, todo, shared)


def _processes(fn, tasks, todo, workers, shared):
    """A pool of spawned worker processes (`process_pool`), owned by this sweep (`owned`),
    each given `shared` once as it starts."""
    import concurrent.futures as cf  # noqa: PLC0415

    with owned(process_pool(workers, shared)) as pool:
        index = {pool.submit(fn, tasks[i]): i for i in todo}
        for fut in cf.as_completed(index):
            yield index[fut], fut.result()


@contextmanager
def owned(pool, who: str = "sweep"):
    """A pool that a sweep (or a capacity search) started, and stops. Left early (Ctrl-C, a
    failed run), what has not started is dropped and worker processes are terminated: runs
    in the middle are abandoned at once, where waiting for a long one would hold the exit
    (threads cannot be stopped: they finish their run in the background). A worker that
    dies in a run (killed, out of memory) is an SqError (`worker_ended`), never a hang."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

    try:
        yield pool
    except BaseException as stop:
        processes = not isinstance(pool, ThreadPoolExecutor)
        if processes:
            manager = _manager_of(pool)         # (`shutdown` forgets it)
            _terminate_workers(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        if processes:
            _join_manager(*manager)
        if isinstance(stop, BrokenProcessPool):
            raise worker_ended(who) from None
        raise
    pool.shutdown()


def process_pool(workers: int, shared: dict | None = None):
    """A `ProcessPoolExecutor` of spawned workers (not forked from a parent that may hold
    threads) that leave Ctrl-C to the parent, start without the caller's main script
    (`_main_hidden`) and keep `shared` (`sq.study.plan.ship`)."""
    import concurrent.futures as cf  # noqa: PLC0415
    import multiprocessing  # noqa: PLC0415

    class Pool(cf.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            with _main_hidden():  # the pool starts its workers as tasks arrive
                return super().submit(fn, *args, **kwargs)

    return Pool(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start,
                initargs=(os.getpid(), shared))


def worker_ended(who: str) -> SqError:
    """The error for a pool whose worker process died in a run (`BrokenProcessPool`), for
    the sweep and the capacity search alike."""
    return SqError(f"{who}: a worker process ended in the middle of a run (killed, or out of memory?); "
                   "the runs that finished are kept with cache=DIR, and a rerun computes only the rest",
                   phase="run")


def _terminate_workers(pool) -> None:
    """Stop the pool's worker processes now (Python 3.14 has a method for it)."""
    stop = getattr(pool, "terminate_workers", None)
    if stop is not None:
        stop()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _manager_of(pool) -> tuple:
    """A process pool's manager thread and its wake-up pipe (None, None: a pool without them)."""
    return getattr(pool, "_executor_manager_thread", None), getattr(pool, "_executor_manager_thread_wakeup", None)


def _join_manager(thread, wakeup, timeout: float = 5.0) -> None:
    """Wait (briefly: its workers are gone) for a stopped pool's manager thread to close its
    wake-up pipe, then make that pipe's wake-up a no-op. Python before 3.12 wakes the thread at
    exit without the lock under which the thread closes the pipe; a close in between printed a
    traceback ("Bad file descriptor") after a Ctrl-C when the thread was slow to end (a loaded
    machine). The thread needs no more wake-ups: `shutdown` has sent its last one."""
    if thread is not None:
        thread.join(timeout)
    if wakeup is not None:
        wakeup.wakeup = _no_wakeup


def _no_wakeup() -> None:
    """A stopped pool's wake-up (`_join_manager`)."""


@contextmanager
def _main_hidden():
    """`__main__` replaced by an empty module while worker processes start.

    A spawned worker imports the parent's main script first, which runs a script
    without an `if __name__ == "__main__":` guard again, sweep and all, and breaks
    the pool. Workers run a function of sq's (`sq.study.sweep.run_task`) and need nothing of the script, so
    they are started without it.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _worker_start(parent: int, shared: dict | None = None) -> None:
    """A worker leaves Ctrl-C to its parent, and dies with it: on Linux the kernel sends it
    SIGKILL when the parent ends (PR_SET_PDEATHSIG), so a SIGTERM or SIGKILL of `sweep -j 2`
    leaves no worker running and holding the caller's stdout; a parent already gone by then
    ends the worker at once. It keeps the study's IRs (`shared`) for its tasks."""
    import signal  # noqa: PLC0415

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes  # noqa: PLC0415

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)
    if shared:
        ship(shared)


def _is_futures(x) -> bool:
    import concurrent.futures as cf  # noqa: PLC0415

    return isinstance(x, cf.Executor)


def _is_dask(x) -> bool:
    return type(x).__module__.split(".")[0] == "distributed" and hasattr(x, "submit") and hasattr(x, "gather")


def _futures(fn, pool, tasks, todo, shared=None):
    import concurrent.futures as cf  # noqa: PLC0415

    if shared:      # a pool of the caller's: each task carries its point's IR
        index = {pool.submit(attach, shared[tasks[i].ir.digest], fn, tasks[i]): i for i in todo}
    else:
        index = {pool.submit(fn, tasks[i]): i for i in todo}
    try:
        for fut in cf.as_completed(index):
            yield index[fut], fut.result()
    finally:
        for fut in index:
            fut.cancel()


WORKER_WAIT = 30.0      # seconds a Dask scheduler with no workers has to get one
KEPT = "help: the runs that finished are kept (in the Sweep's records, and with cache=DIR on disk): a rerun with the cache computes only the rest"


def _address(client) -> str:
    return getattr(getattr(client, "scheduler", None), "address", None) or ""


def _dask(fn, client, tasks, todo, shared=None):
    """The runs on a Dask cluster. A scheduler with no worker is given WORKER_WAIT seconds to
    get one; a scheduler lost, or a run that keeps killing its workers, is an SqError (exit 2)
    naming it, not an internal error -- the runs that finished are kept (cache=DIR)."""
    from concurrent.futures import CancelledError  # noqa: PLC0415

    distributed = require("distributed", "a Dask executor")
    _wait_for_a_worker(client)
    if shared:      # each point's IR once to the cluster, under a fresh key (a digest as the key
        # raced the release of the last batch's copy: "lost dependencies"), not hashed again
        digests = list(shared)
        irs = dict(zip(digests, client.scatter([shared[d] for d in digests], hash=False)))
        futures = [client.submit(attach, irs[tasks[i].ir.digest], fn, tasks[i], pure=False) for i in todo]
    else:
        futures = client.map(fn, [tasks[i] for i in todo], pure=False)
    index = {f.key: i for f, i in zip(futures, todo)}
    try:
        for fut in distributed.as_completed(futures):
            yield index[fut.key], fut.result()
    except distributed.KilledWorker as e:
        raise SqError(f"the Dask cluster failed the study: a run kept killing its workers (out of memory?) ({e})",
                      phase="run", notes=(KEPT,)) from None
    except (OSError, TimeoutError, distributed.comm.CommClosedError, CancelledError) as e:
        # (the client cancels the futures of a scheduler it lost: "scheduler-connection-lost")
        raise SqError(f"the Dask scheduler {_address(client)} was lost in the middle of the study "
                      f"({type(e).__name__})", phase="run", notes=(KEPT,)) from None
    finally:
        try:
            client.cancel(futures)
        except Exception:  # noqa: BLE001 -- a lost scheduler cannot cancel; nothing is left to stop
            pass


def _wait_for_a_worker(client) -> None:
    try:
        if client.scheduler_info().get("workers"):
            return
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except (TimeoutError, OSError) as e:
        raise SqError(f"the Dask scheduler {_address(client)} has no workers "
                      f"(waited {WORKER_WAIT:g} s; {type(e).__name__})", phase="run",
                      notes=("help: start some (`dask worker ADDRESS`), or run without --scheduler",)) from None
