"""Print the import cycles between toolcrib's subpackages and between its modules; exit 1 when there is one.

Every import counts: at module level, inside functions (lazy) and under ``if TYPE_CHECKING:``. Usage:
``python scripts/import_cycles.py [SRC]`` (SRC defaults to the repository's ``src``)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = "toolcrib"


def modules(src: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The toolcrib modules that ``name`` imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a import b` imports the module a.b when there is one, else the name b of a
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    resolved = {_owner(t, known) for t in targets if t == ROOT or t.startswith(ROOT + ".")}
    return {t for t in resolved if t is not None and t != name}


def _owner(target: str, known: dict[str, Path]) -> str | None:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def package_of(module: str) -> str:
    """The subpackage a module belongs to (``toolcrib.agent.runner`` -> ``toolcrib.agent``); top-level
    modules (``toolcrib.workspace``) are their own unit."""
    parts = module.split(".")
    return ".".join(parts[:2])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one member (Tarjan), shortest path
    back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_loop(graph, c) for c in components]


def _loop(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first member, by breadth-first search inside it."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    following.append(w)
        frontier = following
    return component


def report(title: str, found: Iterable[list[str]]) -> Iterator[str]:
    for loop in found:
        yield f"{title}: {' -> '.join(loop)}"


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "src"
    known = modules(src)
    module_graph = {name: imported(name, path, known) for name, path in known.items()}
    package_graph: dict[str, set[str]] = {}
    for name, targets in module_graph.items():
        edges = package_graph.setdefault(package_of(name), set())
        edges.update(package_of(t) for t in targets if package_of(t) not in (package_of(name), ROOT))
    lines = [*report("package cycle", cycles(package_graph)), *report("module cycle", cycles(module_graph))]
    for line in lines:
        print(line)
    print(f"{len(known)} modules, {len(package_graph)} packages: "
          f"{sum(1 for line in lines if line.startswith('package'))} package cycles, "
          f"{sum(1 for line in lines if line.startswith('module'))} module cycles")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
