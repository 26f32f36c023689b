"""The engine: its concerns (`.pxi`, compiled into sq/_engine.pyx, one C translation unit), its
structs (`_state.pxd`), the random streams (`_random`, `_src/`), the serQ trace reader, progress,
and the Python side of a run (`run`)."""
