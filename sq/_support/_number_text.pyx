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
"""
from libc.math cimport fabs, floor, isfinite, signbit
from libc.stdint cimport int64_t
from libc.stdlib cimport atoi
from libc.string cimport memcpy, strchr, strlen


cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags, int* ptype) except NULL
    void* PyMem_Realloc(void* p, size_t n)
    void PyMem_Free(void* p)
    str PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    const char* PyUnicode_AsUTF8AndSize(object u, Py_ssize_t* size) except NULL


cdef enum:
    # the longest positional text: a sign, "0.", 323 zeros and 17 digits (5e-324 has 1), or
    # 309 digits before the point; with room to spare
    TEXT_MAX = 400


cdef struct Text:
    char* data
    Py_ssize_t size
    Py_ssize_t cap


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


cdef int text_add(Text* t, const char* s, Py_ssize_t n) except -1:
    text_room(t, n)
    memcpy(t.data + t.size, s, n)
    t.size += n
    return 0


cdef int text_add_str(Text* t, str s) except -1:
    cdef Py_ssize_t n
    cdef const char* u = PyUnicode_AsUTF8AndSize(s, &n)
    return text_add(t, u, n)


cdef Py_ssize_t write_int(char* out, int64_t v) noexcept:
    """v's decimal digits (with a '-' if negative) at out; their count."""
    cdef char digits[24]
    cdef Py_ssize_t n = 0, k = 0
    cdef bint negative = v < 0
    cdef unsigned long long u = <unsigned long long> (-v if negative else v)
    if negative:
        out[0] = b'-'
        k = 1
    while True:
        digits[n] = <char> (48 + u % 10)   # '0' + the last digit
        n += 1
        u //= 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        out[k] = digits[n]
        k += 1
    return k


cdef Py_ssize_t write_positional(char* out, double x) except -1:
    """A finite x at out (at least TEXT_MAX bytes) in positional notation with its shortest
    round-trip digits, never an exponent, no `.0`: `1e20` is `100000000000000000000`, `1e-7`
    is `0.0000001`, -0.0 is `-0`; the text's length."""
    cdef char* r
    cdef char* e
    cdef char digits[32]
    cdef const char* p
    cdef Py_ssize_t n = 0, whole = 0, point, k = 0, i
    cdef bint seen_point = False
    if x == floor(x) and fabs(x) < 9007199254740992.0:
        if x == 0.0 and signbit(x):
            out[0], out[1] = b'-', b'0'
            return 2
        return write_int(out, <int64_t> x)
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
    cdef Py_ssize_t i
    cdef object v
    cdef tuple vs = tuple(values)
    if len(vs) != len(keys):
        raise ValueError("json_members: as many values as keys")
    try:
        for i in range(len(keys)):
            if i:
                text_add(&t, b",", 1)
            text_add_str(&t, <str> keys[i])
            v = vs[i]
            if type(v) is float:
                text_add_json_float(&t, <double> v)
            elif v is None:
                text_add(&t, b"null", 4)
            elif type(v) is int:
                text_add_str(&t, str(v))
            elif type(v) is str:
                text_add(&t, b'"', 1)
                text_add_str(&t, <str> v)
                text_add(&t, b'"', 1)
            else:
                text_add_str(&t, other(v))
        return PyUnicode_DecodeUTF8(t.data, t.size, NULL)
    finally:
        PyMem_Free(t.data)
