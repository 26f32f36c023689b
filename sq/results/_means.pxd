# A step function's mean over a span from its integral: the one definition of the report's time
# averages, read from `Area` pairs (sq.results._stats.time_means) and from the engine's own Area
# structs when it makes a report's rows itself (sq/_engine.pyx's _report_rows).


cdef inline double time_mean(double integral, double value, double span) noexcept nogil:
    """integral / span, or the value held at the end when the span is not positive."""
    return integral / span if span > 0.0 else value
