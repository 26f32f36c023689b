# cython: language_level=3
"""The trace scanners: CSV and JSON-lines records → numpy columns, one chunk at a time.

A file is read in chunks of `CHUNK` bytes (the caller's file object: plain or gzip),
so memory holds one chunk and the columns built so far, never the file. Each
chunk's complete lines are parsed in C with the GIL released, straight into the
columns, sized from the file's size at the first chunk's bytes a line (with a
quarter to spare: pages not yet written take no memory), grown by doubling if
that was short (`ndarray.resize`, which zeroes what it adds) and cut to their
length at the end: no second copy of the columns, as joining a list of
per-chunk arrays needed (the peak of reading a week-long trace).

What a field is, per column (a byte code, given by sq/traces/formats.py):

* `n` a number: digits with an optional sign, fraction and exponent. A plain
  decimal of at most 15 significant digits is its integer divided by an exact
  power of ten (one correctly rounded division); anything else goes to
  `strtod`, which rounds correctly too. So every value is the nearest double.
* `t` a date-time `YYYY-MM-DD[ T]HH:MM:SS[.f…][Z|±HH:MM]`: two columns, whole
  seconds since 1970 (int64, UTC when a zone is given) and the fraction
  (float64, its digits over a power of ten), so differences keep the
  fraction's digits (an epoch second and 7 digits do not fit one double).
* `k` an identifier (a number or a string): its bytes' 64-bit FNV-1a hash.
* `a` (JSON only) an array of integers: a flat int64 column and a count per record.
* `s` skipped.

A bad field raises `ScanError(line, col, message)` (1-based, bytes), which
sq/traces/reader.py turns into an SqError pointing at the file.
"""
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memchr, memcmp, memcpy

import numpy as np

cimport numpy as cnp

cnp.import_array()

CHUNK = 1 << 22

ctypedef const char* cstr
ctypedef double* dptr
ctypedef int64_t* iptr

cdef double[23] POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
                         1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


class ScanError(Exception):
    """A field the scanner refuses: 1-based line and column (bytes), and what was expected."""

    def __init__(self, line, col, message):
        super().__init__(message)
        self.line, self.col, self.message = line, col, message


cdef enum:
    OK = 0
    BAD_NUMBER = 1
    BAD_TIME = 2
    FEW_FIELDS = 3
    MANY_FIELDS = 4
    BAD_JSON = 5
    MISSING_KEY = 6
    BAD_ARRAY = 7
    TOO_MANY = 8

cdef struct Fault:
    int code
    int64_t line          # within the chunk, from 0
    int64_t col           # byte in the line, from 0
    int field             # the column (CSV) or key (JSON) at fault


cdef inline bint is_digit(char c) noexcept nogil:
    return c >= c'0' and c <= c'9'


cdef const char* parse_number(const char* p, const char* end, double* out) noexcept nogil:
    """A decimal number in [p, end) as a whole: its value in *out, else NULL."""
    cdef const char* q = p
    cdef bint neg = False
    cdef uint64_t mant = 0
    cdef int digits = 0, frac = 0
    cdef bint simple = True
    cdef char[64] buf
    cdef char* stop
    cdef int n
    if q < end and (q[0] == c'-' or q[0] == c'+'):
        neg = q[0] == c'-'
        q += 1
    cdef const char* first = q
    while q < end and is_digit(q[0]):
        if mant or q[0] != c'0':
            digits += 1
        mant = mant * 10 + <uint64_t> (q[0] - c'0') if digits <= 19 else mant
        q += 1
    cdef bint had_int = q > first
    cdef bint had_frac = False
    if q < end and q[0] == c'.':
        q += 1
        while q < end and is_digit(q[0]):
            had_frac = True
            if mant or q[0] != c'0':
                digits += 1
            mant = mant * 10 + <uint64_t> (q[0] - c'0') if digits <= 19 else mant
            frac += 1
            q += 1
    if not had_int and not had_frac:
        return NULL
    if q < end and (q[0] == c'e' or q[0] == c'E'):
        simple = False
        q += 1
        if q < end and (q[0] == c'-' or q[0] == c'+'):
            q += 1
        if q >= end or not is_digit(q[0]):
            return NULL
        while q < end and is_digit(q[0]):
            q += 1
    if q != end:
        return NULL
    if simple and digits <= 15 and frac <= 22:
        out[0] = (<double> mant) / POW10[frac] if frac else <double> mant
        if neg:
            out[0] = -out[0]
        return q
    n = <int> (end - p)
    if n >= 63:
        return NULL
    memcpy(buf, p, n)
    buf[n] = 0
    out[0] = strtod(buf, &stop)
    return q if stop == buf + n else NULL


cdef inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
    """Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    cdef int64_t era = (y if y >= 0 else y - 399) // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline int digits_at(const char* p, const char* end, int n, int64_t* out) noexcept nogil:
    cdef int i
    cdef int64_t v = 0
    if end - p < n:
        return -1
    for i in range(n):
        if not is_digit(p[i]):
            return -1
        v = v * 10 + (p[i] - c'0')
    out[0] = v
    return 0


# The last minute parse_time read: a trace's consecutive records mostly share their date, hour
# and minute (a week of 27 M requests: ~2,700 a minute), whose parse and calendar sum were two
# thirds of a time's cost. The same 16 bytes give the same seconds, so the cache is exact.
cdef struct Minute:
    char[16] text         # `YYYY-MM-DD HH:MM` as in the file (checked when it was read)
    int64_t start         # its seconds since 1970, the zone not applied
    bint known


cdef int parse_time(const char* p, const char* end, int64_t* sec, double* frac, Minute* last) noexcept nogil:
    """`YYYY-MM-DD[ T]HH:MM:SS[.f…][Z|±HH:MM]` → whole seconds since 1970 and the fraction."""
    cdef int64_t y, mo, d, h, mi, s, zh, zm
    cdef uint64_t f = 0
    cdef int nf = 0
    if last.known and end - p >= 19 and memcmp(p, last.text, 16) == 0:
        if p[16] != c':' or digits_at(p + 17, end, 2, &s) or s > 60:
            return -1
        sec[0] = last.start + s
    else:
        if (digits_at(p, end, 4, &y) or end - p < 19 or p[4] != c'-' or digits_at(p + 5, end, 2, &mo)
                or p[7] != c'-' or digits_at(p + 8, end, 2, &d) or (p[10] != c' ' and p[10] != c'T')
                or digits_at(p + 11, end, 2, &h) or p[13] != c':' or digits_at(p + 14, end, 2, &mi)
                or p[16] != c':' or digits_at(p + 17, end, 2, &s)):
            return -1
        if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or s > 60:
            return -1
        memcpy(last.text, p, 16)
        last.start = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60
        last.known = True
        sec[0] = last.start + s
    p += 19
    if p < end and p[0] == c'.':
        p += 1
        if p >= end or not is_digit(p[0]):
            return -1
        while p < end and is_digit(p[0]):
            if nf < 18:
                f = f * 10 + <uint64_t> (p[0] - c'0')
                nf += 1
            p += 1
    if p < end and p[0] == c'Z':
        p += 1
    elif p < end and (p[0] == c'+' or p[0] == c'-'):
        if digits_at(p + 1, end, 2, &zh) or end - p < 6 or p[3] != c':' or digits_at(p + 4, end, 2, &zm):
            return -1
        sec[0] -= (1 if p[0] == c'+' else -1) * (zh * 3600 + zm * 60)
        p += 6
    if p != end:
        return -1
    frac[0] = (<double> f) / POW10[nf] if nf <= 15 else (<double> f) / (POW10[15] * POW10[nf - 15])
    return 0


cdef inline uint64_t fnv1a(const char* p, const char* end) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL
    while p < end:
        h = (h ^ <unsigned char> p[0]) * 1099511628211ULL
        p += 1
    return h


cdef inline const char* line_end(const char* p, const char* end) noexcept nogil:
    cdef const char* q = <const char*> memchr(p, c'\n', end - p)    # libc's: a word at a time
    return q if q != NULL else end


cdef int64_t newlines(const char* p, int64_t n) noexcept nogil:
    """The `\\n` bytes of [p, p + n). A loop gcc vectorises, 16 bytes at a time, each block's count
    kept in bytes (at most 255 a lane before it is added up): bytes.count went a byte at a time and
    was a fifth of reading a CSV trace."""
    cdef int64_t i = 0, total = 0, j, stop
    cdef unsigned char[16] lane
    cdef int b
    while n - i >= 16 * 255:
        for b in range(16):
            lane[b] = 0
        stop = i + 16 * 255
        while i < stop:
            for b in range(16):
                lane[b] += p[i + b] == c'\n'
            i += 16
        for b in range(16):
            total += lane[b]
    for j in range(i, n):
        total += p[j] == c'\n'
    return total


cdef inline const char* trimmed(const char* p, const char* e) noexcept nogil:
    """The end of a line without its `\\r` and trailing blanks."""
    while e > p and ((e - 1)[0] == b'\r' or (e - 1)[0] == c' ' or (e - 1)[0] == b'\t'):
        e -= 1
    return e


# ---- CSV ----------------------------------------------------------------------------------------
cdef int64_t csv_chunk(const char* buf, const char* end, const char* kinds, int nkinds,
                       double** num, int64_t** ints, double** frac, int64_t row0,
                       Fault* fault) noexcept nogil:
    """Parse the lines of [buf, end) (every one ends before `end` or at a `\\n`) into the columns;
    blank lines are skipped. The rows parsed, or -1 with *fault set."""
    cdef const char* p = buf
    cdef const char* le
    cdef const char* te
    cdef const char* fs
    cdef const char* fe
    cdef int64_t row = row0, line = 0
    cdef int k
    cdef Minute minute
    minute.known = False
    while p < end:
        le = line_end(p, end)
        te = trimmed(p, le)
        if te > p:
            fs = p
            for k in range(nkinds):
                fe = fs
                while fe < te and fe[0] != c',':
                    fe += 1
                if kinds[k] == c'n':
                    if parse_number(fs, fe, &num[k][row]) == NULL:
                        fault.code, fault.line, fault.col, fault.field = BAD_NUMBER, line, fs - p, k
                        return -1
                elif kinds[k] == c't':
                    if parse_time(fs, fe, &ints[k][row], &frac[k][row], &minute) < 0:
                        fault.code, fault.line, fault.col, fault.field = BAD_TIME, line, fs - p, k
                        return -1
                elif kinds[k] == c'k':
                    ints[k][row] = <int64_t> fnv1a(fs, fe)
                if k < nkinds - 1:
                    if fe >= te:
                        fault.code, fault.line, fault.col, fault.field = FEW_FIELDS, line, te - p, k + 1
                        return -1
                    fs = fe + 1
                elif fe < te:
                    fault.code, fault.line, fault.col, fault.field = MANY_FIELDS, line, fe - p, k + 1
                    return -1
            row += 1
        line += 1
        p = le + 1
    return row - row0


# ---- JSON lines ---------------------------------------------------------------------------------
cdef inline const char* ws(const char* p, const char* e) noexcept nogil:
    while p < e and (p[0] == c' ' or p[0] == b'\t' or p[0] == b'\r'):
        p += 1
    return p


cdef const char* skip_string(const char* p, const char* e) noexcept nogil:
    """Past a JSON string starting at its opening quote; NULL if it does not close."""
    p += 1
    while p < e:
        if p[0] == c'\\':
            p += 2
            continue
        if p[0] == c'"':
            return p + 1
        p += 1
    return NULL


cdef const char* skip_value(const char* p, const char* e) noexcept nogil:
    """Past one JSON value (nested arrays and objects too); NULL if it is malformed."""
    cdef int depth = 0
    cdef const char* q
    p = ws(p, e)
    if p >= e:
        return NULL
    if p[0] == c'"':
        return skip_string(p, e)
    if p[0] != c'[' and p[0] != c'{':
        q = p
        while q < e and q[0] != c',' and q[0] != c'}' and q[0] != c']' and q[0] != c' ':
            q += 1
        return q if q > p else NULL
    while p < e:
        if p[0] == c'"':
            p = skip_string(p, e)
            if p == NULL:
                return NULL
            continue
        if p[0] == c'[' or p[0] == c'{':
            depth += 1
        elif p[0] == c']' or p[0] == c'}':
            depth -= 1
            if depth == 0:
                return p + 1
        p += 1
    return NULL


cdef int64_t json_chunk(const char* buf, const char* end, const char** keys, const int* key_len,
                        const char* kinds, int nkeys, double** num, int64_t** ints,
                        int64_t* flat, int64_t flat_cap, int64_t* flat_n, int64_t* counts,
                        int64_t row0, Fault* fault) noexcept nogil:
    """Parse the JSON objects of [buf, end), one a line, picking the keys asked for."""
    cdef const char* p = buf
    cdef const char* le
    cdef const char* q
    cdef const char* ks
    cdef const char* v
    cdef const char* ve
    cdef int64_t row = row0, line = 0, seen, n
    cdef int k, found
    cdef double d
    while p < end:
        le = line_end(p, end)
        q = ws(p, le)
        if q < le:
            if q[0] != c'{':
                fault.code, fault.line, fault.col, fault.field = BAD_JSON, line, q - p, -1
                return -1
            q += 1
            seen = 0
            while True:
                q = ws(q, le)
                if q < le and q[0] == c'}':
                    q += 1
                    break
                if q >= le or q[0] != c'"':
                    fault.code, fault.line, fault.col, fault.field = BAD_JSON, line, q - p, -1
                    return -1
                ks = q + 1
                q = skip_string(q, le)
                if q == NULL:
                    fault.code, fault.line, fault.col, fault.field = BAD_JSON, line, ks - 1 - p, -1
                    return -1
                found = -1
                for k in range(nkeys):
                    if key_len[k] == q - 1 - ks and (key_len[k] == 0 or
                            (ks[0] == keys[k][0] and _same(ks, keys[k], key_len[k]))):
                        found = k
                        break
                q = ws(q, le)
                if q >= le or q[0] != c':':
                    fault.code, fault.line, fault.col, fault.field = BAD_JSON, line, q - p, -1
                    return -1
                v = ws(q + 1, le)
                ve = skip_value(v, le)
                if ve == NULL:
                    fault.code, fault.line, fault.col, fault.field = BAD_JSON, line, v - p, found
                    return -1
                if found >= 0:
                    seen |= (<int64_t> 1) << found
                    if kinds[found] == c'n':
                        if parse_number(v, ve, &num[found][row]) == NULL:
                            fault.code, fault.line, fault.col, fault.field = BAD_NUMBER, line, v - p, found
                            return -1
                    elif kinds[found] == c'k':
                        if v[0] == c'"':
                            ints[found][row] = <int64_t> fnv1a(v + 1, ve - 1)
                        elif parse_number(v, ve, &d) != NULL and d == <double> <int64_t> d:
                            ints[found][row] = <int64_t> d
                        else:
                            ints[found][row] = <int64_t> fnv1a(v, ve)
                    elif kinds[found] == c'a':
                        if v[0] != c'[':
                            fault.code, fault.line, fault.col, fault.field = BAD_ARRAY, line, v - p, found
                            return -1
                        n = 0
                        q = ws(v + 1, ve)
                        while q < ve - 1:
                            ks = q
                            while q < ve - 1 and q[0] != c',' and q[0] != c' ' and q[0] != c']':
                                q += 1
                            if parse_number(ks, q, &d) == NULL or d != <double> <int64_t> d:
                                fault.code, fault.line, fault.col, fault.field = BAD_ARRAY, line, ks - p, found
                                return -1
                            if flat_n[0] >= flat_cap:
                                fault.code, fault.line, fault.col, fault.field = TOO_MANY, line, ks - p, found
                                return -1
                            flat[flat_n[0]] = <int64_t> d
                            flat_n[0] += 1
                            n += 1
                            q = ws(q, ve)
                            if q < ve - 1 and q[0] == c',':
                                q = ws(q + 1, ve)
                        counts[row] = n
                q = ws(ve, le)
                if q < le and q[0] == c',':
                    q += 1
            for k in range(nkeys):
                if not (seen >> k) & 1:
                    fault.code, fault.line, fault.col, fault.field = MISSING_KEY, line, 0, k
                    return -1
            row += 1
        line += 1
        p = le + 1
    return row - row0


cdef inline bint _same(const char* a, const char* b, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


# ---- the driver ---------------------------------------------------------------------------------
def scan(stream, str kinds, *, keys=None, int64_t first_line=1, bytes head=b"", int64_t size=0):
    """Scan `stream` (a binary file object, positioned at the first data line, which is line
    `first_line` of the file; `head` the bytes already read past that point) into columns.
    `size`: the bytes left to read if known (a plain file), to size the columns once.

    CSV when `keys` is None: `kinds` has one code per field. JSON lines otherwise: one code
    per key. Returns a list of columns in `kinds` order: a float64 array for `n`, an int64
    array for `k`, a pair (int64 seconds, float64 fraction) for `t`, a pair (flat int64,
    int64 counts) for `a`, None for `s`."""
    cdef int nk = len(kinds)
    cdef bytes kinds_b = kinds.encode()
    cdef const char* kc = kinds_b
    cdef bint json = keys is not None
    cdef list key_bytes = [k.encode() for k in keys] if json else []
    cdef cstr[64] kp
    cdef int[64] kl
    cdef dptr[64] num
    cdef iptr[64] ints
    cdef dptr[64] frac
    cdef Fault fault
    cdef int64_t rows, lines, line_no = first_line, flat_n, flat_cap, i
    cdef const char* b
    cdef const char* e
    cdef bytes chunk, rest = head
    cdef int64_t* flat_p = NULL
    cdef int64_t* counts_p = NULL
    cdef char c
    if nk > 64:
        raise ValueError("at most 64 columns")
    for i in range(len(key_bytes)):
        kp[i] = <const char*> key_bytes[i]
        kl[i] = len(key_bytes[i])
    parts = [[] for _ in range(nk)]          # the `a` columns' per-chunk arrays, joined at the end
    cols = _columns(kinds_b)                   # the other columns, grown in place
    cdef int64_t total = 0, cap = 0
    done = False
    while not done:
        more = stream.read(CHUNK)
        if not more:
            done = True
            chunk = rest
            rest = b""
        else:
            chunk = rest + more
            cut = chunk.rfind(b"\n")
            if cut < 0:
                rest = chunk
                continue
            rest = chunk[cut + 1:]
            chunk = chunk[:cut + 1]
        if not chunk:
            continue
        lines = newlines(<const char*> chunk, len(chunk)) + 1
        if total + lines > cap:
            # the first chunk's lines a byte over what is left, and a quarter more; then doubling
            cap = max(2 * cap, total + lines, (size * lines // len(chunk)) * 5 // 4 if cap == 0 else 0)
            _grow(cols, cap)
        for i in range(nk):
            c = kc[i]
            if c == c'n':
                num[i] = <double*> cnp.PyArray_DATA(cols[i]) + total
            elif c == c't':
                ints[i] = <int64_t*> cnp.PyArray_DATA(cols[i][0]) + total
                frac[i] = <double*> cnp.PyArray_DATA(cols[i][1]) + total
            elif c == c'k':
                ints[i] = <int64_t*> cnp.PyArray_DATA(cols[i]) + total
            elif c == c'a':
                flat = np.empty(len(chunk) // 2 + 1, np.int64)      # an integer takes 2 bytes or more
                counts = np.zeros(lines, np.int64)
                flat_p = <int64_t*> cnp.PyArray_DATA(flat)
                counts_p = <int64_t*> cnp.PyArray_DATA(counts)
                flat_cap = len(flat)
        b = <const char*> chunk
        e = b + len(chunk)
        flat_n = 0
        with nogil:
            if json:
                rows = json_chunk(b, e, kp, kl, kc, nk, num, ints, flat_p, flat_cap, &flat_n,
                                  counts_p, 0, &fault)
            else:
                rows = csv_chunk(b, e, kc, nk, num, ints, frac, 0, &fault)
        if rows < 0:
            raise ScanError(line_no + fault.line, fault.col + 1, _message(fault, kinds, keys))
        total += rows
        for i in range(nk):
            if kc[i] == c'a':
                parts[i].append((flat[:flat_n].copy(), counts[:rows]))
        line_no += lines - 1
    _grow(cols, total)
    for i in range(nk):
        if kc[i] == c'a':
            cols[i] = (_join([p[0] for p in parts[i]], np.int64), _join([p[1] for p in parts[i]], np.int64))
    return cols


def _columns(bytes kinds):
    """Empty columns of `kinds` (module docstring; None for `s`, and for `a`: scan joins its chunks')."""
    cols = []
    for c in kinds:
        if c == ord("n"):
            cols.append(np.empty(0, np.float64))
        elif c == ord("t"):
            cols.append((np.empty(0, np.int64), np.empty(0, np.float64)))
        elif c == ord("k"):
            cols.append(np.empty(0, np.int64))
        else:
            cols.append(None)
    return cols


def _grow(cols, int64_t n):
    """Every column of `_columns` resized to n rows in place (realloc: the rows so far kept)."""
    for col in cols:
        for a in (col if isinstance(col, tuple) else (col,)):
            if a is not None:
                a.resize(n, refcheck=False)


def _join(arrays, dtype):
    if not arrays:
        return np.empty(0, dtype)
    return np.concatenate(arrays) if len(arrays) > 1 else np.ascontiguousarray(arrays[0])


def _message(Fault f, kinds, keys):
    what = (f"`{keys[f.field]}`" if keys is not None else f"column {f.field + 1}") if f.field >= 0 else ""
    wording = {
        BAD_NUMBER: f"{what}: expected a number",
        BAD_TIME: f"{what}: expected a date and time YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]",
        FEW_FIELDS: f"expected {len(kinds)} fields, found {f.field}",
        MANY_FIELDS: f"expected {len(kinds)} fields, found more",
        MISSING_KEY: f"missing key `{keys[f.field]}`" if keys is not None else "",
        BAD_ARRAY: f"{what}: expected an array of whole numbers",
        TOO_MANY: f"{what}: more array items than the line can hold",
    }
    if f.code in wording:
        return wording[f.code]
    return "expected a JSON object on each line" if f.field < 0 else f"{what}: malformed JSON value"
