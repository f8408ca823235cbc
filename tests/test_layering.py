"""The layering of the package, as a test (docs/architecture.md draws it).

Every module's imports are parsed with ``ast`` (function-level ones included) and checked against
the rooms' ranks: a module may import its own room and rooms of a lower rank, never a higher one,
never another room of the same rank; and no chain of imports between modules may come back to
where it started. The test fails on a tree with an upward import or an import cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "textcause"

#: Each room and its rank: a room imports only rooms of a lower rank (and itself).
RANKS = {
    "textcause.io": 0,
    "textcause.paths": 0,
    "textcause.validation": 0,
    "textcause.progress": 0,
    "textcause.startup": 0,
    "textcause.version": 0,
    "textcause.interrupts": 0,
    "textcause.estimators": 1,
    "textcause.specs": 1,
    "textcause.metrics": 2,
    "textcause.sensitivity": 2,
    "textcause.corpus": 3,
    "textcause.simulation": 4,
    "textcause.observational": 4,
    "textcause.features": 5,
    "textcause.data": 6,
    "textcause.models": 7,
    "textcause.gender": 8,
    "textcause.counterfactual": 8,
    "textcause.callbacks": 8,
    "textcause.methods": 8,
    "textcause.run": 9,
    "textcause.store": 9,
    "textcause.grid": 10,
    "textcause.sweep": 10,
    "textcause.analysis": 10,
    "textcause.experiments": 11,
    "textcause.reports": 12,
    "textcause.advise": 13,
    "textcause.cli": 14,
    "textcause.__main__": 15,
    "textcause": 15,
}


def module_names(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its file (``from pkg import sub`` names ``pkg.sub``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "textcause")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "textcause":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m != name}


def room(name: str) -> str:
    """The room of a module: the longest prefix of its name in :data:`RANKS`."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in RANKS:
            return prefix
    raise KeyError(name)


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_names(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Imports of a higher room or of another room of the same rank."""
    out = []
    for src, targets in sorted(edges.items()):
        a = room(src)
        for dst in sorted(targets):
            b = room(dst)
            if a != b and RANKS[b] >= RANKS[a]:
                out.append(f"{src} (rank {RANKS[a]}) imports {dst} (rank {RANKS[b]})")
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_room():
    missing = [m for m in module_names() if not any(m == r or m.startswith(r + ".") for r in RANKS)]
    assert not missing, f"modules outside every room of RANKS: {missing}"


def test_no_room_imports_a_higher_one():
    bad = violations(graph())
    assert not bad, "imports that look up:\n" + "\n".join(bad)


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from textcause.store import ledger\n", "textcause.store.ledger"),
        ("def f():\n    from textcause.reports.report import write_report\n", "textcause.reports.report"),
        ("import textcause.cli.main\n", "textcause.cli.main"),
    ],
)
def test_the_checker_sees_an_upward_import(tmp_path, source, expected):
    """A module of a low room importing a higher one, at module level or inside a function, is caught."""
    pkg = tmp_path / "textcause"
    for sub in ("corpus", "store", "reports", "cli"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    for mod in ("store/ledger.py", "reports/report.py", "cli/main.py"):
        (pkg / mod).write_text("")
    (pkg / "corpus" / "reader.py").write_text(source)
    bad = violations(graph(pkg))
    assert bad == [f"textcause.corpus.reader (rank 3) imports {expected} (rank {RANKS[room(expected)]})"]


def test_the_checker_sees_a_cycle(tmp_path):
    pkg = tmp_path / "textcause" / "grid"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from textcause.grid import b\n")
    (pkg / "b.py").write_text("def f():\n    from textcause.grid.a import x\n")
    assert cycles(graph(pkg.parent)) == [["textcause.grid.a", "textcause.grid.b"]]
