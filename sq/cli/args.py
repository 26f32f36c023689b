"""What the subcommands of `python -m sq` share: argument types, the program's and the
studies' flags, and the checks and resources of the study commands (sweep, capacity).

Every reader here turns a bad value into one `SqError` (phase settings) or an argparse
type error: one line and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import re
import sys

from sq.errors import SqError
from sq._support.files import check_writable
from sq._support.settings import SEED_RANGE, at_most, is_u64

_SEED_SPAN = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


# -- argument types ------------------------------------------------------------------------

def seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        value = -1     # not a whole number: refused below, in the same words as one out of range
    if not is_u64(value):
        raise argparse.ArgumentTypeError(f"a seed is {SEED_RANGE}, found `{text}`")
    return value


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found `{text}`")


def whole_number(text: str) -> int:
    """A whole number; its range is checked by what it sets (the run, the search)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found `{text}`")


def overrides(pairs: list[str] | None, flag: str) -> dict[str, str]:
    """`--set`/`--def` NAME=EXPR pairs as {name: expression text}."""
    return once_each((_override(pair, flag) for pair in pairs or []), flag)


def _override(pair: str, flag: str) -> tuple[str, str]:
    name, sep, value = pair.partition("=")
    if not sep or not name.strip():
        raise SqError(f"{flag} takes NAME=EXPR, found `{pair}`", phase="settings")
    return name.strip(), value


def once_each(pairs, flag: str) -> dict:
    """(name, value) pairs of a repeatable flag (`--set`, `--def`) as a dict: a name given twice
    is an error, not a silent choice of one of its values, for `run` and `sweep` alike."""
    out: dict = {}
    for name, value in pairs:
        if name in out:
            raise SqError(f"{flag} {name} is given twice (one {flag} per name)", phase="settings")
        out[name] = value
    return out


def parse_seeds(text: str) -> list[int]:
    """`--seeds`: 1..10 (both ends included) or 1,4,9; checked as the API's `seeds` are."""
    from sq.study.plan import seed_list  # noqa: PLC0415

    m = _SEED_SPAN.match(text)
    try:
        if m:
            first, last = int(m.group(1)), int(m.group(2))
            if last < first:
                raise SqError(f"--seeds {text}: the range is empty", phase="settings")
            at_most(last - first + 1, "seeds", f"--seeds {text}")
            seeds = list(range(first, last + 1))
        else:
            seeds = [int(s, 0) for s in text.split(",")]
    except ValueError:
        raise SqError(f"--seeds takes 1..10 or 1,4,9, found `{text}`", phase="settings") from None
    seeds = seed_list(seeds, f"--seeds {text}")
    if len(seeds) == 1:     # `--seeds 10` is the seed 10, not ten seeds: say so before any run
        print(f"warning: --seeds {text.strip()} is one seed, {seeds[0]}: a study's intervals need two or more "
              f"(--seeds 1..{seeds[0]} for {seeds[0]} seeds)" if seeds[0] > 1 else
              f"warning: --seeds {text.strip()} is one seed: a study's intervals need two or more (--seeds 1..10)",
              file=sys.stderr)
    return seeds


# -- flags -----------------------------------------------------------------------------------

def add_program_args(p: argparse.ArgumentParser, settings: bool) -> None:
    """The program and its overrides; with `settings`, the flags that replace its `run {}` block."""
    p.add_argument("file", help="the .sq program")
    p.add_argument("--set", dest="sets", action="append", metavar="NAME=EXPR",
                   help="override a `let` constant (repeatable)")
    p.add_argument("--def", dest="defs", action="append", metavar="NAME=EXPR",
                   help="replace the body of an expression `def` (repeatable)")
    if settings:
        p.add_argument("--seed", type=seed, help="the run's seed (default: the program's, else 1)")
        _add_limits(p)
        p.add_argument("--trace", help="replace the workload's trace file")


def add_run_args(p: argparse.ArgumentParser) -> None:
    """The flags of every study command (sweep, capacity): seeds, run settings, where to run, the cache."""
    p.add_argument("--seeds", default="1..10", help="seeds: 1..10 (both ends included) or 1,4,9 (default 1..10)")
    _add_limits(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("-j", "--jobs", type=whole_number, help="worker processes (default: every core; 1: no pool)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on a Dask cluster's scheduler")
    p.add_argument("--cache", metavar="DIR", help="keep each finished run in DIR; a rerun computes only what is missing")


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--horizon", type=number, help="simulated time to run")
    p.add_argument("--warmup", type=number, help="time before statistics start")
    p.add_argument("--arrivals", type=whole_number, help="stop after N arrivals have ended")


# -- what the study commands check and open ------------------------------------------------

PLOT_FORMATS = (".png", ".pdf", ".svg")


def check_output(path: str, flag: str) -> None:
    """The file of `--out` (a table) or `--plot-out` (a figure): `files.check_writable` with the
    formats that flag writes; checked before any run, not after all of them."""
    from sq.study.sweep import WRITERS  # noqa: PLC0415

    check_writable(path, flag, PLOT_FORMATS if flag == "--plot-out" else tuple(WRITERS))


def headless_plots(flag: str) -> None:
    """matplotlib, drawing to files only (the Agg backend: no display needed), or the
    one-line error naming the extra to install."""
    from sq._support._optional import require  # noqa: PLC0415

    require("matplotlib", flag).use("Agg")


def scheduler(address: str | None):
    """`with scheduler(args.scheduler) as client:` a Dask client of the scheduler at `address`,
    closed on the way out; None without an address."""
    return contextlib.nullcontext() if address is None else _closing_quietly(_dask_client(address))


@contextlib.contextmanager
def _closing_quietly(client):
    """The client, closed on the way out. Left by an error (a scheduler lost), its close stops
    the client's attempts to reconnect, which Dask logs as tracebacks on stderr: the error
    already says what happened, so Dask's log is silenced first (the command is ending)."""
    import logging  # noqa: PLC0415

    try:
        yield client
    except BaseException:
        logging.disable(logging.CRITICAL)
        raise
    finally:
        client.close()


CONNECT_WAIT = 10.0     # seconds a scheduler has to answer before --scheduler gives up


def _dask_client(address: str):
    """A Dask client of the scheduler at `address`, connected within CONNECT_WAIT seconds: a
    port that accepts connections but never speaks Dask (or answers HTTP) made the client wait
    for good, so it is made in a thread given that long; anything else that port does is one
    SqError (exit 2)."""
    import threading  # noqa: PLC0415

    from sq._support._optional import require  # noqa: PLC0415

    distributed = require("distributed", "--scheduler")
    made: dict = {}

    def connect() -> None:
        try:
            made["client"] = distributed.Client(address, timeout=f"{CONNECT_WAIT}s")
        except Exception as e:  # noqa: BLE001 -- whatever the port did, it is not a scheduler we can use
            made["error"] = e

    thread = threading.Thread(target=connect, name="sq-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_WAIT + 2.0)
    if "client" in made:
        return made["client"]
    error = made.get("error")
    why = (f"no Dask scheduler answered within {CONNECT_WAIT:g} s" if error is None
           else f"{type(error).__name__}: {error}" if isinstance(error, (OSError, TimeoutError))
           else "what answered there does not speak Dask's protocol")
    raise SqError(f"--scheduler {address}: cannot reach the scheduler ({why})", phase="settings",
                  notes=("help: is a Dask scheduler listening there? (`dask scheduler` prints its address)",))