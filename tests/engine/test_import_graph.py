"""The import graph of ``engine/`` has no circle, and nothing under ``engine/`` or ``protocols/`` imports
torch or the trainer (the dependency rule ``protocols -> engine <- trainer``).

Every import statement counts, lazy ones inside functions and ``TYPE_CHECKING`` ones included: a circle
that only a deferred import keeps from failing is still two modules that cannot be read apart.
``from package import module`` is an edge to the module (the package's ``__init__`` runs first, as
for every import of a submodule, but the importer does not use it).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules(package: str) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file under ``package`` (a package as its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(path: Path) -> set[str]:
    """Every module name ``path`` imports (absolute imports; ``from x import y`` gives ``x`` and
    ``x.y``: the caller keeps whichever is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``from p import m`` counts as ``m`` only)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imported(path)
        edges = {m for m in imported if m in modules and m != name}
        # ``from engine.games import go_kernel``: the submodule, not the package it sits in
        edges -= {m for m in edges if any(other.startswith(m + ".") for other in edges)}
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


def test_engine_has_no_import_circle() -> None:
    graph = _graph("engine")
    assert len(graph) > 50  # the walk found the package
    assert _circles(graph) == []


def test_engine_and_protocols_import_neither_torch_nor_the_trainer() -> None:
    for package in ("engine", "protocols"):
        for name, path in _modules(package).items():
            bad = {m for m in _imported(path) if m.split(".")[0] in ("torch", "trainer")}
            assert not bad, f"{name} imports {sorted(bad)}"
