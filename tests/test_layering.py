"""The import rules of docs/ARCHITECTURE.md, checked on every import statement in the tree.

simcore never imports explorer or Qt; nothing outside explorer/ui imports Qt. Imports
inside functions count too (a lazy import of Qt in the model would still need a display).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT = ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6", "pytestqt")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
    return out


def violations(package: str, forbidden: tuple[str, ...], allowed_under: str | None = None, root: Path = ROOT) -> list[str]:
    bad = []
    for path in sorted((root / package).rglob("*.py")):
        if allowed_under and (root / allowed_under) in path.parents:
            continue
        for mod in imported_modules(path):
            if mod.split(".")[0] in forbidden:
                bad.append(f"{path.relative_to(root)} imports {mod}")
    return bad


def test_simcore_never_imports_explorer_or_qt():
    assert violations("simcore", ("explorer", *QT)) == []


def test_only_explorer_ui_imports_qt():
    assert violations("explorer", QT, allowed_under="explorer/ui") == []


def test_the_check_catches_a_violation(tmp_path):
    pkg = tmp_path / "simcore"
    pkg.mkdir()
    (pkg / "bad.py").write_text("def f():\n    from PySide6 import QtCore\n")
    assert violations("simcore", QT, root=tmp_path) == ["simcore/bad.py imports PySide6"]


def test_the_timeline_index_never_imports_the_analyses():
    """explorer/model/timeline (what the window draws) stands on its own; the analyses may read it."""
    bad = [f"{p.relative_to(ROOT)} imports {m}" for p in sorted((ROOT / "explorer/model/timeline").rglob("*.py"))
           for m in imported_modules(p) if m.startswith(("explorer.model.analysis", "explorer.ui", "explorer.cli"))]
    assert bad == []
