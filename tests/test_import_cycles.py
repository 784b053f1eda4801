"""No import cycles in simcore or explorer: every module's imports -- at module level and inside
functions (a lazy import hides a cycle, it does not remove it) -- walked statically, and the
strongly connected components of that graph listed. Importing `a.b.c` is counted as an edge to
`a.b.c` only (its parent packages are namespaces here); `from a.b import c` is an edge to the
module `a.b.c` when there is one, else to `a.b`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simcore", "explorer")



def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is a package __init__)."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def imports_of(name: str, mods: dict[str, tuple[Path, bool]]) -> set[str]:
    """The project modules `name` imports anywhere in its source."""
    path, is_pkg = mods[name]
    package = name if is_pkg else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in mods:
                    out.add(sub)
                elif target in mods:
                    out.add(target)
    out.discard(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
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
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def describe(comp: list[str], graph: dict[str, set[str]]) -> str:
    """A cycle as its modules and the imports that close it."""
    members = set(comp)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & members))}" for m in comp)


def project_cycles(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> tuple[list[list[str]], dict]:
    mods = modules(root, packages)
    graph = {m: imports_of(m, mods) for m in mods}
    return cycles(graph), graph


def test_simcore_has_no_import_cycle():
    found, graph = project_cycles()
    in_simcore = [c for c in found if any(m.startswith("simcore") for m in c)]
    assert not in_simcore, "import cycles in simcore:\n" + "\n".join(describe(c, graph) for c in in_simcore)


def test_explorer_has_no_import_cycle():
    found, graph = project_cycles()
    in_explorer = [c for c in found if any(m.startswith("explorer") for m in c)]
    assert not in_explorer, "import cycles in explorer:\n" + "\n".join(describe(c, graph) for c in in_explorer)


def test_the_walk_finds_lazy_relative_and_from_imports(tmp_path):
    pkg = tmp_path / "simcore"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from simcore.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import c\n")           # lazy and relative
    (pkg / "sub" / "c.py").write_text("from ..a import thing\n")                   # relative from-import
    (pkg / "d.py").write_text("import simcore.a\n")                               # imports into the cycle only
    found, graph = project_cycles(tmp_path, ("simcore",))
    assert found == [["simcore.a", "simcore.sub.b", "simcore.sub.c"]]
    assert describe(found[0], graph) == "simcore.a -> simcore.sub.b; simcore.sub.b -> simcore.sub.c; simcore.sub.c -> simcore.a"
