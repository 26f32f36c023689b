"""sq's import graph, floor by floor (python benchmarks/import_graph.py): how many modules and
imports, and every import that runs up a floor, reaches the face or closes a cycle.

tests/face/test_layout.py checks the same graph. An import is any `import`/`from ... import` in a
module (function-level ones too: they are read with `ast`), any `cimport` and `include` in the
Cython files (read by regex: a `.pyx` is not Python).
"""
from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

SQ = Path(__file__).resolve().parent.parent / "sq"

# The floors, lowest first: a module imports only from its own floor or the ones below it.
# The face (sq/__init__.py, and `python -m sq`) is the top; nothing inside sq imports it.
FLOORS = ("sq.errors", "sq._support", "sq.ir", "sq.frontend", "sq.lower", "sq.results", "sq.traces", "sq.engine",
          "sq.study", "sq.costs", "sq.bench", "sq.cli", "sq")
# sq/_engine.pyx stays at the top of the tree (the design card) but is the engine's module.
PLACED = {"sq._engine": "sq.engine", "sq.__main__": "sq"}

_CYTHON_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+c?import[ \t]+\(?([\w, \t*]+)|c?import[ \t]+([\w.]+))",
                            re.M)
_INCLUDE = re.compile(r'^[ \t]*include[ \t]+"([^"]+)"', re.M)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SQ.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> list[Path]:
    return sorted(p for ext in ("*.py", "*.pyx", "*.pxd", "*.pxi") for p in SQ.rglob(ext))


def modules() -> set[str]:
    return {module_name(p) for p in sources()}


def floor_of(module: str) -> str:
    if module in PLACED:
        return PLACED[module]
    return next(f for f in FLOORS if module == f or module.startswith(f + ".") or f == "sq")


def _imported(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) pairs `path` imports: name is None for `import module`."""
    text = path.read_text(encoding="utf-8")
    found = []
    if path.suffix == ".py":
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found += [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                found += [(base, a.name) for a in node.names]
        return found
    for m in _CYTHON_IMPORT.finditer(text):
        if m.group(3):
            found.append((m.group(3), None))
        else:
            found += [(m.group(1), n.strip()) for n in m.group(2).split(",") if n.strip()]
    folder = module_name(path).rpartition(".")[0]
    for m in _INCLUDE.finditer(text):
        found.append((folder + "." + m.group(1).removesuffix(".pxi").replace("/", "."), None))
    return found


def imports() -> list[tuple[str, str, str | None]]:
    """Every import inside sq of a module of sq: (importer, imported module, name or None)."""
    known = modules()
    edges = []
    for path in sources():
        importer = module_name(path)
        for module, name in _imported(path):
            if module != "sq" and not module.startswith("sq."):
                continue
            if name and f"{module}.{name}" in known:        # `from sq.x import y`, y a module
                module, name = f"{module}.{name}", None
            edges.append((importer, module, name))
    return edges


def upward(edges) -> list[tuple[str, str]]:
    rank = {f: i for i, f in enumerate(FLOORS)}
    return [(a, b) for a, b, _ in edges if rank[floor_of(b)] > rank[floor_of(a)]]


def face_imports(edges) -> list[str]:
    return [a for a, b, _ in edges if b == "sq" and a != "sq"]


def borrowed_private(edges) -> list[tuple[str, str, str]]:
    """`from M import _x` where M is in another floor than the importer (module names may be private:
    the Cython extensions are; names defined in one package are not another's to use)."""
    return [(a, b, n) for a, b, n in edges
            if n and n.startswith("_") and not n.startswith("__") and floor_of(a) != floor_of(b)]


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> None:
    edges = imports()
    pairs = {(a, b) for a, b, _ in edges if a != b}
    per_floor = Counter(floor_of(m) for m in modules())
    print(f"{len(modules())} modules in {len(FLOORS)} floors, {len(pairs)} imports (module to module)")
    for f in FLOORS:
        print(f"  {f:<12} {per_floor[f]:>3} modules")
    for title, items in (("imports running up a floor", upward(edges)), ("imports of the face", face_imports(edges)),
                         ("private names borrowed across floors", borrowed_private(edges)),
                         ("cycles", cycles(edges))):
        print(f"{title}: {len(items)}")
        for item in items:
            print("  ", item)


if __name__ == "__main__":
    main()
