"""Optional packages: import one, or fail with one line naming the `pip install` to run.

The core needs numpy only; tables, plots, progress bars and clusters come from extras
(pyproject.toml's `[project.optional-dependencies]`). This is the one place that maps a
module to the extra that provides it.
"""
from __future__ import annotations

import importlib

from sq.errors import SqError

# module -> the extra of pyproject.toml that installs it
EXTRA = {
    "pandas": "table",
    "pyarrow": "table",
    "xarray": "table",
    "matplotlib": "plot",
    "matplotlib.pyplot": "plot",
    "tqdm": "progress",
    "distributed": "cluster",
}


def require(module: str, what: str):
    """`module` imported, or an SqError: `WHAT needs MODULE: pip install 'sq[EXTRA]'`."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRA.get(module, "all")
        raise SqError(f"{what} needs {module.split('.')[0]}, which is not installed: "
                      f"pip install 'sq[{extra}]'", phase="settings") from None


def available(module: str) -> bool:
    """True when `module` imports (for optional behaviour that has a fallback)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
