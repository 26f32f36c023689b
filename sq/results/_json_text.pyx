# cython: language_level=3, boundscheck=False, wraparound=False
"""A report's JSON text in one pass in C (`sq.results.report.Report.to_json` says what the text is).

Every member of every object goes into one buffer (sq._support._number_text's writer, which
json_members writes with too), and one str is made at the end. A sweep writes a report per
run; written in Python, piece by piece, a text's member strings, lists and join cost about
as much again as its numbers.
"""
from cpython.mem cimport PyMem_Free

from sq._support._number_text cimport Text, text_add, text_add_str, text_add_members


cdef extern from "Python.h":
    str PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)


def report_text(report, tuple head_keys, head_values, tuple observe_keys, tuple gauge_keys, gauge_values,
                row_object, str tail, other):
    """The JSON text of `report`: its own members (`head_keys`, their values by `head_values`,
    an attrgetter), each observe's (`observe_keys`, the values its `json_values()` gives), each
    gauge's (`gauge_keys`, by `gauge_values`), each stage's and pool's row (the keys and getter
    `row_object(type(row))` gives), then `tail` (members after pyserq's, or "") and the
    closing brace. A number that is not a float, an int or None is written by `other`."""
    cdef Text t = Text(NULL, 0, 0)
    try:
        text_add(&t, b"{", 1)
        text_add_members(&t, head_keys, head_values(report), other)
        text_add(&t, b',"observes":{', 13)
        _named(&t, report.observes.values(), observe_keys, None, other)
        text_add(&t, b'},"gauges":{', 12)
        _named(&t, report.gauges.values(), gauge_keys, gauge_values, other)
        text_add(&t, b'},"stages":[', 12)
        _rows(&t, report.stages, row_object, other)
        text_add(&t, b'],"pools":[', 11)
        _rows(&t, report.pools, row_object, other)
        text_add(&t, b"]", 1)
        text_add_str(&t, tail)
        text_add(&t, b"}", 1)
        return PyUnicode_DecodeUTF8(t.data, t.size, NULL)
    finally:
        PyMem_Free(t.data)


cdef int _named(Text* t, objects, tuple keys, values, other) except -1:
    """The members `"name":{...}` of named objects (observes, gauges), comma-separated: the
    values by `values(obj)`, or (None) by the object's `json_values()` (an observe's)."""
    cdef bint first = True
    for o in objects:
        if not first:
            text_add(t, b",", 1)
        first = False
        text_add(t, b'"', 1)
        text_add_str(t, o.name)         # (serQ writes names unescaped)
        text_add(t, b'":{', 3)
        text_add_members(t, keys, o.json_values() if values is None else values(o), other)
        text_add(t, b"}", 1)
    return 0


cdef int _rows(Text* t, rows, row_object, other) except -1:
    """The JSON objects of stage or pool rows, comma-separated."""
    cdef bint first = True
    for row in rows:
        if not first:
            text_add(t, b",", 1)
        first = False
        keys, values = row_object(type(row))
        text_add(t, b"{", 1)
        text_add_members(t, keys, values(row), other)
        text_add(t, b"}", 1)
    return 0
