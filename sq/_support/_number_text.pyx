# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The positional text of a double and the report's JSON members, at C speed.

sq._support.number_format says what each form is and is the only module that
uses these: a report is written per run (a sweep writes thousands), and its
~30 numbers cost more through Python's string methods than its statistics.

`positional` starts from the shortest digits that read back to the same double
(CPython's `repr` digits, `PyOS_double_to_string` with mode 'r', which are Rust's
`{}` digits) and places the decimal point itself where repr would use an exponent.
An integral double below 2^53 is its integer's decimal digits (its shortest digits,
with the point after them), written without that search (a report's counts and
zeros: the search costs ~2,000 instructions even for 1.0).

The shortest digits of a double between 2^-13 and 2^52 (a report's means, rates and times)
are found in 128-bit integers (`shortest`, ~300 instructions against dtoa's ~7,000);
others go through dtoa. Both give the same digits: the shortest decimal that reads back
to the double, the nearest of those, an exact tie to the even digit (see `shortest`).
"""
from libc.math cimport fabs, floor, isfinite, signbit
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport atoi
from libc.string cimport memcpy, strchr, strlen


cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags, int* ptype) except NULL
    void* PyMem_Realloc(void* p, size_t n)
    void PyMem_Free(void* p)
    str PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    long long PyLong_AsLongLongAndOverflow(object v, int* overflow) except? -1


cdef extern from *:
    """
    typedef unsigned __int128 sq_u128;
    """
    # (gcc's 128-bit integer: products of a 55-bit significand and a power of ten up to 10^21)
    ctypedef unsigned long long u128 "sq_u128"


cdef enum:
    # the longest positional text: a sign, "0.", 323 zeros and 17 digits (5e-324 has 1), or
    # 309 digits before the point; with room to spare
    TEXT_MAX = 400


# (Text, the growing buffer every text here is written into, is declared in _number_text.pxd)


cdef int text_room(Text* t, Py_ssize_t more) except -1:
    """At least `more` bytes free at the end of t."""
    cdef Py_ssize_t cap = t.cap
    cdef char* grown
    if t.size + more <= cap:
        return 0
    while cap < t.size + more:
        cap = cap * 2 if cap else 1024
    grown = <char*> PyMem_Realloc(t.data, cap)
    if grown == NULL:
        raise MemoryError()
    t.data, t.cap = grown, cap
    return 0


# (text_add and text_add_str, inline, are in _number_text.pxd)


# "00" "01" ... "99": write_int's digits two at a time (one division by 100 for two digits)
cdef const char* DIGIT_PAIRS = (b"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                b"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                b"8081828384858687888990919293949596979899")


cdef Py_ssize_t write_int(char* out, int64_t v) noexcept:
    """v's decimal digits (with a '-' if negative) at out; their count. The digits are made
    from the last, two at a time, at the end of a buffer, then copied (a report's ~25 shortest
    floats are 15-17 digits each: a division and a reversal per digit cost ~4,000 instructions
    a report)."""
    cdef char digits[24]
    cdef Py_ssize_t at = 24, k = 0
    cdef unsigned long long u = (0 - <unsigned long long> v) if v < 0 else <unsigned long long> v   # (-INT64_MIN too)
    cdef unsigned long long q
    if v < 0:
        out[0] = b'-'
        k = 1
    while u >= 100:
        q = u // 100
        at -= 2
        memcpy(digits + at, DIGIT_PAIRS + 2 * (u - q * 100), 2)
        u = q
    if u >= 10:
        at -= 2
        memcpy(digits + at, DIGIT_PAIRS + 2 * u, 2)
    else:
        at -= 1
        digits[at] = <char> (48 + u)   # '0' + the digit
    memcpy(out + k, digits + at, 24 - at)
    return k + 24 - at


# 10^k for k <= 21 (10^21 < 2^70), filled at import
cdef u128 POW10[22]
POW10[0] = 1
for _k in range(1, 22):
    POW10[_k] = POW10[_k - 1] * 10


cdef bint shortest(double x, uint64_t* digits, int* exp10) noexcept nogil:
    """The shortest round-trip digits of x (finite, 2^-13 <= |x| < 2^52) as an integer and
    the power of ten of its last digit (|x| reads back from digits * 10^exp10); False, and
    nothing written, for an x outside that range.

    Which decimal: of those in x's rounding interval (the reals that read back to x: half
    an ulp either side, a quarter below a power of two; the ends included when x's
    significand is even, as reading rounds a tie to even), those with the fewest digits;
    of these the nearest to x; of two as near, the one with an even last digit. That is
    what dtoa's mode 0 (Python's `repr`) and Ryu (Adams, PLDI 2018) both print. The
    digit-removal loop is Ryu's general case; its inputs here are exact: x, the interval's
    ends and x itself scaled by 10^k, with k chosen so that x's image has 18 or 19 digits,
    floored in 128-bit integers, each with a flag saying whether the floor was exact."""
    cdef uint64_t bits, m2, mv, vr, vp, vm, fraction
    cdef uint64_t unit = 1
    cdef u128 p10, pr, pp, pm, mask
    cdef int b, k, s, removed = 0, last = 0
    cdef bint even, vr_exact, vm_exact
    memcpy(&bits, &x, 8)
    b = <int> ((bits >> 52) & 0x7ff) - 1023          # x in [2^b, 2^(b+1))
    if b < -13 or b > 51:
        return False
    fraction = bits & ((unit << 52) - 1)
    m2 = fraction | (unit << 52)         # x = m2 * 2^(b-52)
    even = (m2 & 1) == 0
    # the interval in units of 2^(b-54): x is 4 m2, its ends 4 m2 + 2 and 4 m2 - 2 (4 m2 - 1
    # at a power of two, whose lower neighbour is half as far)
    mv = 4 * m2
    k = 17 - ((b * 78913) >> 18)     # 17 - floor(b log10 2): x 10^k in [10^17, 2 10^18)
    s = 54 - b                       # in [3, 67]
    p10 = POW10[k]
    mask = ((<u128> 1) << s) - 1
    pr = <u128> mv * p10
    pp = <u128> (mv + 2) * p10
    pm = <u128> (mv - (1 if fraction == 0 else 2)) * p10
    vr, vp, vm = <uint64_t> (pr >> s), <uint64_t> (pp >> s), <uint64_t> (pm >> s)
    vr_exact = (pr & mask) == 0                  # x 10^k is an integer
    vm_exact = even and (pm & mask) == 0         # the lower end is, and is in the interval
    if not even and (pp & mask) == 0:
        vp -= 1                                  # the upper end is an integer outside the interval
    # drop digits while a coarser decimal is still inside (vm, vp], then while the lower end,
    # when it is exact and included, ends in a zero (once the first test fails it stays false);
    # `last` is the last digit dropped from x's image, vr_exact whether all before it were zeros
    while vp // 10 > vm // 10 or (vm_exact and vm % 10 == 0 and vm != 0):
        vm_exact = vm_exact and vm % 10 == 0
        vr_exact = vr_exact and last == 0
        last = <int> (vr % 10)
        vr //= 10
        vp //= 10
        vm //= 10
        removed += 1
    if vr_exact and last == 5 and vr % 2 == 0:
        last = 4                                 # an exact tie: the even digit
    digits[0] = vr + ((vr == vm and not vm_exact) or last >= 5)
    exp10[0] = removed - k
    return True


cdef Py_ssize_t place_point(char* out, Py_ssize_t k, const char* digits, Py_ssize_t n,
                            Py_ssize_t point) noexcept:
    """digits[:n] (no trailing zeros) at out + k with the decimal point placed: the number
    0.DIGITS * 10^point, positionally; the text's end."""
    cdef Py_ssize_t i
    if point <= 0:
        out[k] = b'0'
        out[k + 1] = b'.'
        k += 2
        for i in range(-point):
            out[k] = b'0'
            k += 1
        for i in range(n):
            out[k] = digits[i]
            k += 1
    elif point >= n:
        for i in range(n):
            out[k] = digits[i]
            k += 1
        for i in range(point - n):
            out[k] = b'0'
            k += 1
    else:
        for i in range(n):
            if i == point:
                out[k] = b'.'
                k += 1
            out[k] = digits[i]
            k += 1
    return k


cdef bint use_shortest = True     # False: every double through dtoa (tests compare the two)


cdef Py_ssize_t write_positional(char* out, double x) except -1:
    """A finite x at out (at least TEXT_MAX bytes) in positional notation with its shortest
    round-trip digits, never an exponent, no `.0`: `1e20` is `100000000000000000000`, `1e-7`
    is `0.0000001`, -0.0 is `-0`; the text's length."""
    cdef char* r
    cdef char* e
    cdef char digits[32]
    cdef const char* p
    cdef Py_ssize_t n = 0, whole = 0, point, k = 0
    cdef bint seen_point = False
    cdef uint64_t d
    cdef int exp10
    if x == floor(x) and fabs(x) < 9007199254740992.0:
        if x == 0.0 and signbit(x):
            out[0], out[1] = b'-', b'0'
            return 2
        return write_int(out, <int64_t> x)
    if use_shortest and shortest(x, &d, &exp10):
        if x < 0:
            out[0] = b'-'
            k = 1
        n = write_int(digits, <int64_t> d)
        point = n + exp10
        while n > 1 and digits[n - 1] == b'0':
            n -= 1
        return place_point(out, k, digits, n, point)
    r = PyOS_double_to_string(x, b'r', 0, 0, NULL)
    e = strchr(r, b'e')
    if e == NULL:   # repr wrote it positionally: its text, without `.0` (no flag asks for one)
        k = strlen(r)
        memcpy(out, r, k)
        PyMem_Free(r)
        return k
    p = r
    if p[0] == b'-':
        out[k] = b'-'
        k += 1
        p += 1
    while p < e:    # the mantissa's digits (one before the point in repr's exponent form)
        if p[0] == b'.':
            seen_point = True
        else:
            digits[n] = p[0]
            n += 1
            if not seen_point:
                whole += 1
        p += 1
    point = whole + atoi(e + 1)    # x == 0.DIGITS * 10**point
    PyMem_Free(r)
    while n > 1 and digits[n - 1] == b'0':
        n -= 1
    return place_point(out, k, digits, n, point)


cdef int text_add_int(Text* t, object v) except -1:
    """An int's decimal digits: in C when it fits in 64 bits (a report's counts), else str's."""
    cdef int overflow = 0
    cdef long long i = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow:
        return text_add_str(t, str(v))
    text_room(t, 24)
    t.size += write_int(t.data + t.size, i)
    return 0


cdef int text_add_json_float(Text* t, double x) except -1:
    if not isfinite(x):
        return text_add(t, b"null", 4)
    text_room(t, TEXT_MAX)
    t.size += write_positional(t.data + t.size, x)
    return 0


def positional(double x):
    """`write_positional`'s text of a finite x (number_format's `display` of a finite number)."""
    cdef char out[TEXT_MAX]
    cdef Py_ssize_t n = write_positional(out, x)
    return PyUnicode_DecodeUTF8(out, n, NULL)


def json_number_of_float(double x):
    """A float as a report's JSON writes it: positional, `null` for NaN and ±inf."""
    if not isfinite(x):
        return "null"
    return positional(x)


def json_members(tuple keys, values, other):
    """`"k":v` for each key text (`'"mean":'`) and value, joined by commas: a float as
    `json_number_of_float`, an int (exactly `int`) in decimal, None as `null`, a str (a
    name: serQ writes names unescaped) in quotes, anything else through `other(value)`."""
    cdef Text t = Text(NULL, 0, 0)
    try:
        text_add_members(&t, keys, values, other)
        return PyUnicode_DecodeUTF8(t.data, t.size, NULL)
    finally:
        PyMem_Free(t.data)


cdef int text_add_members(Text* t, tuple keys, values, other) except -1:
    """json_members' text, added to t (sq/results/_json_text.pyx writes a whole report so)."""
    cdef Py_ssize_t i
    cdef object v
    cdef tuple vs = values if type(values) is tuple else tuple(values)
    if len(vs) != len(keys):
        raise ValueError("json_members: as many values as keys")
    for i in range(len(keys)):
        if i:
            text_add(t, b",", 1)
        text_add_str(t, <str> keys[i])
        v = vs[i]
        if type(v) is float:
            text_add_json_float(t, <double> v)
        elif v is None:
            text_add(t, b"null", 4)
        elif type(v) is int:
            text_add_int(t, v)
        elif type(v) is str:
            text_add(t, b'"', 1)
            text_add_str(t, <str> v)
            text_add(t, b'"', 1)
        else:
            text_add_str(t, other(v))
    return 0


def positional_lines(double[::1] xs, bint fast=True):
    """The JSON text of each of xs, a line each, and how many took `shortest`: with `fast`
    as a report writes them, else every one through dtoa. tests/_support/test_shortest.py
    holds the two texts equal over millions of doubles."""
    global use_shortest
    cdef Text t = Text(NULL, 0, 0)
    cdef Py_ssize_t i, quick = 0
    cdef uint64_t d
    cdef int exp10
    use_shortest = fast
    try:
        for i in range(xs.shape[0]):
            text_add_json_float(&t, xs[i])
            text_add(&t, b"\n", 1)
            if fast and isfinite(xs[i]) and xs[i] != floor(xs[i]) and shortest(xs[i], &d, &exp10):
                quick += 1
        return PyUnicode_DecodeUTF8(t.data, t.size, NULL), quick
    finally:
        use_shortest = True
        PyMem_Free(t.data)
