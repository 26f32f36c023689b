"""Lowering: the IR made the flat arrays and bytecode the engine runs (`lowering`), and the
bytecode contract both sides share (`_bytecode.pxd`, its Python tables in `_bytecode.pyx`)."""
