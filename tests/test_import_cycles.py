"""No import cycles in profkit: each module can be read knowing only what it imports, never what
imports it. Imports are read from the source (ast), both those at module level and those inside
functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "profkit"


def modules(package: Path) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path], lazy: bool) -> set[str]:
    """The profkit modules `name` imports: `from pkg import submodule` needs the submodule, `from
    pkg import anything_else` the package's __init__."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree) if lazy else tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            out |= subs & known.keys()
            if not subs <= known.keys():
                out.add(node.module)
    return {m for m in out if m in known and m != name and not name.startswith(m + ".")}


def cycles(lazy: bool, package: Path = PACKAGE) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    known = modules(package)
    graph = {m: imports(m, p, known, lazy) for m, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back_at_import_time() -> None:
    assert cycles(lazy=False) == []


def test_no_cycles_through_imports_inside_functions_either() -> None:
    assert cycles(lazy=True) == []


def test_a_cycle_is_found(tmp_path: Path) -> None:
    package = tmp_path / "profkit"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from profkit.sub.b import B\n")
    (package / "a.py").write_text("from profkit.sub import b\n")
    (package / "sub" / "b.py").write_text("B = 1\n\ndef f():\n    from profkit import a\n")
    assert cycles(lazy=False, package=package) == []
    assert cycles(lazy=True, package=package) == [["profkit.a", "profkit.sub.b"]]
