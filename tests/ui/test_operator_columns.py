"""The operator table's headers read whole at the dock's default width (issue 17): the answers
first, every shown column inside the dock, the rest one right-click on the header away."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from ui.analysis_helpers import SAMPLES, open_ready

from explorer.ui.operator_columns import MIN_NAME
from explorer.ui.operators_view import COLUMN_KEYS, QtOperators

ANSWERS = {"name", "dur_ns", "share_percent", "bound", "roofline_percent", "mfu_percent", "mfu_bf16_percent",
           "mbu_percent", "tflops", "gbps"}


def shown(view) -> list[int]:
    h = view.header()
    return [h.logicalIndex(v) for v in range(h.count()) if not h.isSectionHidden(h.logicalIndex(v))]


def assert_readable(view) -> None:
    """Every shown header whole (sort arrow included) and inside the viewport; cells on screen unelided."""
    h, fm = view.header(), view.fontMetrics()
    cols = shown(view)
    for i in cols:
        assert h.sectionSize(i) >= h.sectionSizeHint(i), COLUMN_KEYS[i]
    assert max(h.sectionViewportPosition(i) + h.sectionSize(i) for i in cols) <= view.viewport().width()
    model = view.model()
    for r in range(min(model.rowCount(model.index(0, 0)), 20)):
        row = model.index(r, 0, model.index(0, 0))
        for i in cols:
            if COLUMN_KEYS[i] != "name":
                text = model.data(row.siblingAtColumn(i)) or ""
                assert fm.horizontalAdvance(text) + 8 <= h.sectionSize(i), (COLUMN_KEYS[i], text)


def open_menu(qtbot, view) -> QMenu:
    """A right-click on the header, as a user does (the platform turns the click into a context-menu
    event, which the offscreen platform does not: sent here as it would)."""
    h = view.header()
    pos = QPoint(h.sectionViewportPosition(0) + 20, 5)
    QTest.mouseClick(h.viewport(), Qt.RightButton, Qt.NoModifier, pos)
    QApplication.sendEvent(h.viewport(), QContextMenuEvent(QContextMenuEvent.Mouse, pos, h.viewport().mapToGlobal(pos)))
    qtbot.waitUntil(lambda: isinstance(QApplication.activePopupWidget(), QMenu), timeout=5000)
    menu = QApplication.activePopupWidget()
    assert menu.objectName() == "operators-columns-menu"
    return menu


def click_action(menu: QMenu, name: str) -> None:
    act = next(a for a in menu.actions() if a.objectName() == name)
    QTest.mouseClick(menu, Qt.LeftButton, Qt.NoModifier, menu.actionGeometry(act).center())


def test_headers_fit_the_default_dock_width_with_the_answers_first(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "llama3.1-70b-tp16-straggler.trnx", size=(1920, 1080))
    w.panels["Operators"].raise_()
    view = p.operators.view
    qtbot.waitUntil(view.isVisible)
    assert_readable(view)
    assert not view.horizontalScrollBar().isVisible()
    keys = [COLUMN_KEYS[i] for i in shown(view)]
    assert set(keys) >= ANSWERS and keys[:5] == ["name", "bound", "dur_ns", "share_percent", "roofline_percent"]
    assert view.header().sectionSize(COLUMN_KEYS.index("name")) >= MIN_NAME
    # a narrower dock: the name column gives way first, down to its minimum; headers stay whole
    before = view.header().sectionSize(0)
    w.resize(1700, 1080)
    qtbot.waitUntil(lambda: view.header().sectionSize(0) < before)
    assert all(view.header().sectionSize(i) >= view.header().sectionSizeHint(i) for i in shown(view))


def test_right_click_on_the_header_shows_and_hides_columns_and_remembers(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "llama3.1-70b-tp16-straggler.trnx", size=(1920, 1080))
    w.panels["Operators"].raise_()
    view = p.operators.view
    qtbot.waitUntil(view.isVisible)
    where, flops = COLUMN_KEYS.index("where"), COLUMN_KEYS.index("flops")
    assert view.isColumnHidden(where) and not view.isColumnHidden(flops)
    menu = open_menu(qtbot, view)
    labels = [a.text() for a in menu.actions() if a.isCheckable()]
    assert len(labels) == len(COLUMN_KEYS) and labels[:4] == ["name", "bound", "time", "share"]
    assert "chip.core" in labels and not next(a for a in menu.actions() if a.objectName() == "column-name").isEnabled()
    click_action(menu, "column-where")
    assert not view.isColumnHidden(where)
    name_before = view.header().sectionSize(0)
    click_action(open_menu(qtbot, view), "column-flops")
    assert view.isColumnHidden(flops)
    assert view.header().sectionSize(0) > name_before   # the name column takes the room the column left
    assert_readable(view)
    other = QtOperators()   # the next window's table: the same columns
    qtbot.addWidget(other)
    assert not other.view.isColumnHidden(where) and other.view.isColumnHidden(flops)
    click_action(open_menu(qtbot, view), "columns-default")
    assert view.isColumnHidden(where) and not view.isColumnHidden(flops)
    assert_readable(view)


def test_a_tiny_share_reads_without_scientific_notation_and_fits_its_column(qtbot):
    from explorer.ui.operators_view import format_cell

    cells = [format_cell("share_percent", {"share_percent": v}, 0) for v in (50.0, 0.046, 5.3e-6, 4e-9)]
    assert cells == ["50 %", "0.046 %", "0.000005 %", "< 0.000001 %"]   # was "5.3e-06 %", "4e-09 %"
    ops = QtOperators()
    qtbot.addWidget(ops)
    h, fm = ops.view.header(), ops.view.fontMetrics()
    assert all(fm.horizontalAdvance(c) + 8 <= h.sectionSize(COLUMN_KEYS.index("share_percent")) for c in cells)
