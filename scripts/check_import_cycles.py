"""No import cycle: every circle of modules that import each other, with the names that tie it.

    .venv/bin/python scripts/check_import_cycles.py [PACKAGE_DIR ...]    # default: io_tui

Reads the code, runs none of it: every ``.py`` under each package is parsed, and every import in
it counts, wherever it stands (at the top, inside a function, under ``if TYPE_CHECKING:``; the
last two are marked, since they are how a circle is usually hidden rather than cut). Relative
imports are resolved; ``from P import n`` ties to the module ``P.n`` when there is one, else to
``P``. The cycles are the strongly connected components of that graph (Tarjan). Each is printed
with its edges, ``importer:line -> imported: names``; the exit status is 1 if there is any.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Tie:
    """One import statement's names, from one module to another."""

    line: int
    names: tuple[str, ...]
    where: str  # "" at module level, else "in f()" or "type only"


Graph = dict[str, dict[str, list[Tie]]]  # importer -> imported -> ties


def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it stands."""

    def walk(node: ast.AST, where: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, where
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, where or f"in {child.name}()")
            elif isinstance(child, ast.If) and type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "type only")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), where)
            else:
                yield from walk(child, where)

    yield from walk(tree, "")


def type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
    return name == "TYPE_CHECKING"


def graph(known: dict[str, Path]) -> Graph:
    edges: Graph = defaultdict(lambda: defaultdict(list))
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, where in imports(ast.parse(path.read_text(), str(path))):
            targets: dict[str, list[str]] = defaultdict(list)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if target := longest_known(alias.name, known):
                        targets[target].append(alias.name)
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:
                        targets[sub].append(alias.name)
                    elif target := longest_known(base, known):
                        targets[target].append(alias.name)
            for target, names in targets.items():
                if target != name:
                    edges[name][target].append(Tie(node.lineno, tuple(names), where))
    return edges


def longest_known(dotted: str, known: dict[str, Path]) -> str | None:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        if (candidate := ".".join(parts[:n])) in known:
            return candidate
    return None


def cycles(edges: Graph, nodes: Sequence[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, {})))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def report(edges: Graph, found: list[list[str]], known: dict[str, Path], root: Path) -> str:
    lines = []
    for number, component in enumerate(found, start=1):
        lines.append(f"cycle {number}: {len(component)} modules: {', '.join(component)}")
        members = set(component)
        for importer in component:
            for imported, ties in sorted(edges[importer].items()):
                if imported not in members:
                    continue
                for tie in ties:
                    where = f" ({tie.where})" if tie.where else ""
                    at = f"{known[importer].relative_to(root)}:{tie.line}"
                    lines.append(f"  {at} -> {imported}: {', '.join(tie.names)}{where}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    packages = [Path(p) for p in (argv if argv is not None else sys.argv[1:]) or ["io_tui"]]
    known: dict[str, Path] = {}
    for package in packages:
        if not (package / "__init__.py").is_file():
            print(f"{package}: not a package (no __init__.py)", file=sys.stderr)
            return 2
        known |= modules(package.resolve())
    try:
        edges = graph(known)
    except SyntaxError as e:
        print(f"{e.filename}:{e.lineno}: cannot parse: {e.msg}", file=sys.stderr)
        return 2
    found = cycles(edges, sorted(known))
    if not found:
        print(f"no import cycle among {len(known)} modules")
        return 0
    root = packages[0].resolve().parent
    print(report(edges, found, known, root))
    print(f"{len(found)} import cycle(s) among {len(known)} modules")
    return 1


if __name__ == "__main__":
    sys.exit(main())
