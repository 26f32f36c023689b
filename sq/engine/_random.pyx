"""Python face of serQ's random streams (tests, tools); the engine uses the C API."""
from libc.stdint cimport uint32_t, uint64_t

from sq.errors import SqError
from sq.lower._bytecode import DIST_CODES   # the laws' codes: the bytecode contract's (X_SAMPLE)

STREAM_MASKS = {
    "arrival": SQ_STREAM_ARRIVAL_MASK,
    "workload": SQ_STREAM_WORKLOAD_MASK,
    "session": SQ_STREAM_SESSION_MASK,
    "eviction": SQ_STREAM_EVICTION_MASK,
    "trace": SQ_STREAM_TRACE_MASK,
}

_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1


def _as_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            as_int = int(value)
        except (TypeError, ValueError, OverflowError):
            raise SqError(f"{what} {value!r} is not an integer", phase="run") from None
        if as_int != value:
            raise SqError(f"{what} {value!r} is not an integer", phase="run")
        return as_int
    return value


def stream_seed(seed, stream):
    """The seed of one of a run's five streams (`seed ^ mask`, spec 09 §9.8)."""
    seed = _as_int(seed, "seed")
    if not 0 <= seed <= _U64:
        raise SqError(f"seed {seed} is not a 64-bit unsigned integer", phase="run")
    try:
        return seed ^ STREAM_MASKS[stream]
    except KeyError:
        raise SqError(f"unknown random stream `{stream}`", phase="run") from None


cdef class Rng:
    """One ChaCha12 stream, identical to rand 0.9's StdRng::seed_from_u64(seed)."""

    def __init__(self, seed):
        seed = _as_int(seed, "seed")
        if not 0 <= seed <= _U64:
            raise SqError(f"seed {seed} is not a 64-bit unsigned integer", phase="run")
        sq_rng_seed(&self.state, <uint64_t>seed)

    def next_u32(self):
        return sq_rng_next_u32(&self.state)

    def next_u64(self):
        return sq_rng_next_u64(&self.state)

    def random_f64(self):
        return sq_rng_random_f64(&self.state)

    def range_u32(self, lo, hi):
        """A uniform integer in [lo, hi], both included."""
        lo, hi = _as_int(lo, "range_u32 bound"), _as_int(hi, "range_u32 bound")
        if not (0 <= lo <= hi <= _U32):
            raise SqError(f"range_u32: empty or out-of-range bounds {lo}..={hi}", phase="run")
        return sq_rng_range_u32(&self.state, <uint32_t>lo, <uint32_t>hi)

    def draw(self, name, *args):
        """One `~name(args...)` draw (source or IR spelling of the law)."""
        cdef double values[2]
        code = DIST_CODES.get(name)
        if code is None:
            raise SqError(f"unknown distribution `{name}`", phase="run")
        if len(args) != sq_dist_arity(code):
            raise SqError(f"`~{name}` takes {sq_dist_arity(code)} argument(s)", phase="run")
        for i, a in enumerate(args):
            try:
                values[i] = float(a)
            except (TypeError, ValueError):
                raise SqError(f"`~{name}`: argument {a!r} is not a number", phase="run") from None
        return sq_draw(&self.state, code, values)
