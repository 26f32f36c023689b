# Included by sq/lower/_bytecode.pyx: the laws' codes are part of the bytecode contract.
# The laws a `~name` draws from (sq/engine/_src/distributions.h): their codes are what X_SAMPLE
# carries, so they are part of the contract; the engine's streams draw them (sq.engine._random).
cdef extern from "distributions.h":
    enum:
        SQ_DIST_DET
        SQ_DIST_EXP
        SQ_DIST_UNIFORM
        SQ_DIST_ERLANG
        SQ_DIST_H2
        SQ_DIST_BERNOULLI
    int sq_dist_arity(int code)

# Source names of the laws (the `~name` and the IR's `Sample` name) -> C code.
DIST_CODES = {
    "det": SQ_DIST_DET, "Det": SQ_DIST_DET,
    "exp": SQ_DIST_EXP, "Exp": SQ_DIST_EXP,
    "uniform": SQ_DIST_UNIFORM, "Uniform": SQ_DIST_UNIFORM,
    "erlang": SQ_DIST_ERLANG, "Erlang": SQ_DIST_ERLANG,
    "h2": SQ_DIST_H2, "H2": SQ_DIST_H2,
    "bernoulli": SQ_DIST_BERNOULLI, "Bernoulli": SQ_DIST_BERNOULLI,
}


def dist_arity(int code):
    """How many arguments the law with this code takes (-1: no such code)."""
    return sq_dist_arity(code)
