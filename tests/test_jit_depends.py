"""Every cached compiled function that compiles in another file's compiled code declares that file
with `simcore.jit.depends_on`, so an edit there cannot leave its on-disk cache stale
(tests/simcore/test_jit_cache.py shows the mechanism on the scheduler and fluid.py)."""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import pytest

numba = pytest.importorskip("numba")
from numba.core.registry import CPUDispatcher  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def compiled_modules() -> list[types.ModuleType]:
    """The project's modules with numba-compiled functions (none of them imports Qt)."""
    names = []
    for pkg in ("simcore", "explorer"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.name != "jit.py" and "@njit" in path.read_text():
                names.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return [importlib.import_module(n) for n in names]


def callees(d: CPUDispatcher) -> set[CPUDispatcher]:
    """The compiled functions `d` calls by name: `f(...)` or `module.f(...)`."""
    g, names = d.py_func.__globals__, set(d.py_func.__code__.co_names)
    out = set()
    for n in names:
        v = g.get(n)
        if isinstance(v, CPUDispatcher):
            out.add(v)
        elif isinstance(v, types.ModuleType):
            out.update(f for f in (getattr(v, a, None) for a in names) if isinstance(f, CPUDispatcher))
    return out


def foreign_sources(d: CPUDispatcher) -> set[str]:
    """Modules other than d's whose compiled code ends up in d's (through any chain of calls)."""
    seen, todo, mods = {d}, [d], set()
    while todo:
        for c in callees(todo.pop()):
            mods.add(c.py_func.__module__)
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return mods - {d.py_func.__module__}


def test_cached_functions_declare_the_files_they_compile_in():
    mods = compiled_modules()
    assert {"simcore.timing.listsched", "explorer.interop.kineto.scan"} <= {m.__name__ for m in mods}
    checked, missing = 0, []
    for m in mods:
        for name, d in vars(m).items():
            if not isinstance(d, CPUDispatcher) or d.py_func.__module__ != m.__name__:
                continue
            needs = foreign_sources(d)
            if needs and d._cache.__class__.__name__ != "NullCache":
                checked += 1
                declared = set(getattr(d, "cache_depends_on", ()))
                if not needs <= declared:
                    missing.append(f"{m.__name__}.{name} needs @depends_on({', '.join(sorted(needs - declared))})")
    assert checked >= 2  # the scheduler (fluid) and the Kineto scanner (json_bytes)
    assert not missing, missing
