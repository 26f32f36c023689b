"""How tests start Python children: with the interpreter that runs the tests, importing the same sq.

A child gets `PYTHON` (sys.executable: the venv's interpreter, not whatever `python` is on
PATH) and `env()`: this process's environment with the folder this process imported sq from
first on PYTHONPATH — the checkout for an in-place or editable build, site-packages for an
installed one — so a child run from any folder (the repository root, a scratch folder) imports
the sq under test, never a source tree without its compiled modules. PYTHONSAFEPATH keeps a
child's working folder off its path for the same reason (Python 3.11+; older ones ignore it).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import sq

PYTHON = sys.executable
SQ_HOME = str(Path(sq.__file__).resolve().parent.parent)   # the folder that holds the imported `sq`


def env(**extra: str) -> dict[str, str]:
    """os.environ for a child Python that imports the sq under test (`extra` added)."""
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SQ_HOME, inherited])),
            "PYTHONSAFEPATH": "1", **extra}


def python_on_path(bindir: Path) -> Path:
    """A `python` command in `bindir` that runs PYTHON. Not a symlink: a link to a venv's
    interpreter finds no pyvenv.cfg beside itself and starts the base interpreter, without the
    venv's packages."""
    exe = bindir / "python"
    exe.write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n', encoding="utf-8")
    exe.chmod(0o755)
    return exe
