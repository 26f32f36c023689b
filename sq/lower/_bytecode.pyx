"""The bytecode contract (sq/lower/_bytecode.pxd) for Python: its enums, and each member by name.

Cython makes each `cpdef enum` of the .pxd a Python enum here; lower.py imports the members
(`from sq.lower._bytecode import X_NUM`), the disassembler the enums (to name opcodes and operands); the tables' dtypes.
"""
import enum as _enum

import numpy as np

include "_laws.pxi"   # the laws' codes (DIST_CODES, dist_arity): X_SAMPLE carries them

ENUMS = tuple(v for v in list(globals().values()) if isinstance(v, type) and issubclass(v, _enum.Enum))

# The tables' numpy dtypes, from the C structs the engine reads them as (as scikit-learn's
# _tree derives its Node dtype): the field names, order and offsets are the structs'.
cdef StepExprsRow _step_exprs_row
cdef StepServeRow _step_serve_row
cdef SpillRow _spill_row
cdef TraceTurn _trace_turn
STEP_EXPRS_DTYPE = np.asarray(<StepExprsRow[:1]> &_step_exprs_row).dtype
STEP_SERVE_DTYPE = np.asarray(<StepServeRow[:1]> &_step_serve_row).dtype
SPILL_DTYPE = np.asarray(<SpillRow[:1]> &_spill_row).dtype
TRACE_TURN_DTYPE = np.asarray(<TraceTurn[:1]> &_trace_turn).dtype

globals().update({name: int(member) for e in ENUMS for name, member in e.__members__.items()})
