"""The operator tree paints its cells through `TextCells`: what a user sees is, pixel for pixel,
what Qt's own delegate paints -- coloured, selected, elided, right-aligned and greyed cells, in
both themes -- while a repaint no longer asks the model for each cell's roles one by one (seven
calls into Python a cell, and every text shaped twice: 10-13 ms a repaint at 1920x1080)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QStyledItemDelegate

from ui.analysis_helpers import SAMPLES, open_ready
from ui.call_counts import count_calls
from explorer.ui.operators_view import COLUMN_KEYS
from explorer.ui.text_cells import TextCells
from explorer.ui.themes import apply_theme


def _open_tree(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "gemm-4096-bf16.trnx")
    ops = p.operators
    ops.select_node_soon("instruction:5")  # a kernel's events under it, a selected row, coloured names
    qtbot.waitUntil(lambda: ops.current_node() == "instruction:5", timeout=30_000)
    qtbot.waitUntil(lambda: ops.view.isVisible() and ops.view.viewport().height() > 100, timeout=10_000)
    return ops


@pytest.fixture
def tree(qtbot):
    yield _open_tree(qtbot)
    apply_theme("dark")  # the theme is application-wide: leave the default for other tests


def _grab(view, delegate):
    view.setItemDelegate(delegate)
    view.viewport().repaint()
    return view.viewport().grab().toImage()


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_the_tree_looks_as_qt_paints_it(tree, qtbot, theme):
    apply_theme(theme)
    view = tree.view
    ours = view.itemDelegate()
    assert isinstance(ours, TextCells)
    qt = QStyledItemDelegate(view)
    name = COLUMN_KEYS.index("name")
    view.setColumnWidth(name, 120)  # the longer names elided
    for enabled in (True, False):
        view.setEnabled(enabled)
        qtbot.wait(20)
        assert _grab(view, ours) == _grab(view, qt), (theme, enabled)
    view.setItemDelegate(ours)


def test_a_repaint_asks_the_model_for_no_roles(tree):
    """Counted with a profile hook (patching a PySide virtual like `data` outlives the test)."""
    from explorer.ui.operators_view import OperatorTreeModel

    view = tree.view
    view.viewport().repaint()  # (the tree's texts already formatted by its first paints)
    _, calls = count_calls({OperatorTreeModel.data: "data", OperatorTreeModel.cell: "cell"}, view.viewport().repaint)
    assert calls["cell"] >= 100  # every visible cell painted, one call each
    assert calls["data"] == 0  # Qt's delegate: ~7 data() calls a cell


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_a_frame_table_looks_as_qt_paints_it(qtbot, theme):
    """The panels' tables (kernel details, dependencies, statistics...) paint through TextCells too."""
    import pandas as pd
    from PySide6.QtGui import QColor

    from explorer.ui import frame_table as F

    apply_theme(theme)
    try:
        model = F.FrameTableModel([
            F.Column("name", "name"), F.Column("n", "count", F.count), F.Column("t", "time", F.ns),
            F.Column("bound", "bound", colour=lambda rec: QColor("#c0392b") if rec["bound"] == "hbm" else None)])
        table = F.make_table(model, "cells")
        qtbot.addWidget(table)
        table.resize(700, 260)
        table.show()
        qtbot.waitExposed(table)
        model.set_frame(pd.DataFrame({
            "name": [f"kernel {i} " + "with a long name " * (i % 3) for i in range(12)],
            "n": [i * 12_345 for i in range(12)], "t": [i * 1e4 + 0.5 for i in range(12)],
            "bound": ["hbm" if i % 2 else "compute" for i in range(12)]}))
        qtbot.wait(100)  # fitted
        table.setColumnWidth(0, 110)  # the long names elided
        table.selectRow(3)
        assert isinstance(table.itemDelegate(), TextCells)
        for enabled in (True, False):
            table.setEnabled(enabled)
            assert _grab(table, table.itemDelegate()) == _grab(table, QStyledItemDelegate(table)), enabled
            table.setItemDelegate(TextCells(model.cell, table))
    finally:
        apply_theme("dark")
