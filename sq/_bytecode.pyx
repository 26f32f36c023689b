"""The bytecode contract (sq/_bytecode.pxd) for Python: its enums, and each member by name.

Cython makes each `cpdef enum` of the .pxd a Python enum here; lower.py imports the members
(`from sq._bytecode import X_NUM`), the disassembler the enums (to name opcodes and operands).
"""
import enum as _enum

ENUMS = tuple(v for v in list(globals().values()) if isinstance(v, type) and issubclass(v, _enum.Enum))

globals().update({name: int(member) for e in ENUMS for name, member in e.__members__.items()})
