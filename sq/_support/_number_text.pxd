# The text writer of _number_text.pyx that other C modules write into (sq/results/_json_text.pyx:
# a report's whole JSON text in one buffer): a growing byte buffer, and the members of a JSON
# object written into it as json_members writes them.

cdef struct Text:
    char* data          # PyMem memory (PyMem_Free it), UTF-8
    Py_ssize_t size
    Py_ssize_t cap

cdef int text_add(Text* t, const char* s, Py_ssize_t n) except -1
cdef int text_add_str(Text* t, str s) except -1
cdef int text_add_members(Text* t, tuple keys, values, other) except -1
