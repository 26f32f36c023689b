"""One home for each shared piece of sq, checked on the source: what a merge could quietly undo."""
from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import sq

SQ = Path(sq.__file__).parent


def _sources(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in SQ.rglob(pattern))


def test_sq_errors_is_the_home_of_sq_error():
    stale = [f"{p.relative_to(SQ.parent)}:{n}" for p in _sources("*.py", "*.pyx", "*.pxi")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"from sq\.frontend\.errors import .*\bSqError\b", line)]
    assert not stale, f"import SqError from sq.errors: {stale}"
    from sq.frontend import errors as old_home
    assert old_home.SqError is sq.SqError           # code written before the move still works


def test_no_other_module_prints_numbers_its_own_way():
    # sq.numbers holds Rust's Display/Debug and the JSON form; a second copy drifts (it did: 4 of them)
    own_way = [f"{p.relative_to(SQ.parent)}:{n}" for p in _sources("*.py", "*.pyx", "*.pxi") if p.name != "numbers.py"
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"Decimal\(|def (format_number|display_number|fmt_num|format_debug_number)\b", line)]
    assert not own_way, own_way


def test_the_engines_lazy_imports_name_what_exists():
    """The engine imports Python helpers inside functions (run only on an error path):
    each `from sq.X import a, b as c` there must name a module and names that exist."""
    import importlib
    root = Path(sq.__file__).parent
    for path in sorted(root.glob("*.pyx")) + sorted(root.glob("*.pxi")):
        for module, names in re.findall(r"^\s*from (sq(?:\.\w+)*) import ([\w, ]+(?: as \w+)?)\s*$",
                                        path.read_text(), flags=re.M):
            mod = importlib.import_module(module)
            for name in names.split(","):
                name = name.split(" as ")[0].strip()
                assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}"), (path.name, module, name)
