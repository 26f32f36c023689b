# The text writer of _number_text.pyx that other C modules write into (sq/results/_json_text.pyx:
# a report's whole JSON text in one buffer): a growing byte buffer, and the members of a JSON
# object written into it as json_members writes them.

from libc.string cimport memcpy


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object u, Py_ssize_t* size) except NULL


cdef struct Text:
    char* data          # PyMem memory (PyMem_Free it), UTF-8
    Py_ssize_t size
    Py_ssize_t cap

cdef int text_room(Text* t, Py_ssize_t more) except -1


cdef inline int text_add(Text* t, const char* s, Py_ssize_t n) except -1:
    # inline (here, in each module that writes): a report's text adds ~140 pieces per run, most
    # of a few bytes, where a call and text_room's call cost more than the copy
    if t.size + n > t.cap:
        text_room(t, n)
    memcpy(t.data + t.size, s, n)
    t.size += n
    return 0


cdef inline int text_add_str(Text* t, str s) except -1:
    cdef Py_ssize_t n
    cdef const char* u = PyUnicode_AsUTF8AndSize(s, &n)
    return text_add(t, u, n)


cdef int text_add_members(Text* t, tuple keys, values, other) except -1
