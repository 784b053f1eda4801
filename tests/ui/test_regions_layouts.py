"""Regions side by side and named dock layouts, through the real window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QTableView, QWidget


def test_two_regions_side_by_side(window, qtbot):
    window.panels["Regions"].raise_()
    panel = window.findChild(QWidget, "regions")
    flt = panel.findChild(QLineEdit, "regions-filter")
    flt.setText("layer")
    assert {panel.model.record(i)["level"] for i in range(panel.model.rowCount())} >= {"layer"}
    panel.choose(["layer 0", "layer 1"])
    qtbot.waitUntil(lambda: panel.compared.shape[1] == 2, timeout=10_000)
    cmp = panel.findChild(QTableView, "regions-compare").model()
    assert [cmp.headerData(i, Qt.Horizontal) for i in range(3)] == ["metric", "layer 0", "layer 1"]
    row = cmp.find("metric", "instructions")
    assert cmp.cell_text(row, "layer 0") == "550" and cmp.cell_text(row, "layer 1") == "550"  # 50 MM + 500 TT each
    vp = window.view.viewport
    assert vp.t0 <= 50_000 and vp.t1 >= 100_000 and vp.t1 - vp.t0 < 60_000  # the last one chosen is shown


def test_named_layouts_restore_the_docks(window, qtbot):
    layouts = window.tools.layouts
    details = window.panels["Details"]
    layouts.save("analysis")
    window.removeDockWidget(details)
    window.addDockWidget(Qt.LeftDockWidgetArea, details)
    details.show()
    assert window.dockWidgetArea(details) == Qt.LeftDockWidgetArea
    layouts.menu.aboutToShow.emit()
    action = next(a for a in layouts.menu.actions() if a.text() == "analysis")
    action.trigger()
    assert window.dockWidgetArea(details) == Qt.RightDockWidgetArea
    assert "analysis" in layouts.names()
    layouts.delete("analysis")
    assert "analysis" not in layouts.names()


def test_saving_a_layout_under_a_taken_name_asks_first(window, qtbot):
    """Save layout as... with a name already used: the user is asked, No keeps the old layout,
    Yes replaces it; the API refuses without overwrite."""
    import pytest
    from PySide6.QtWidgets import QMessageBox

    from simcore.errors import UserError
    from ui.dialogs import answering, click, type_name

    layouts = window.tools.layouts
    details = window.panels["Details"]
    layouts.save("mine")  # Details on the right
    window.removeDockWidget(details)
    window.addDockWidget(Qt.LeftDockWidgetArea, details)
    details.show()
    layouts.menu.aboutToShow.emit()
    save = next(a for a in layouts.menu.actions() if a.objectName() == "action-save-layout")
    said = []
    assert answering(save.trigger, type_name("mine"), click(QMessageBox.No, said)) == []
    assert said == ["There is already a layout named 'mine'. Replace it?"]
    layouts.restore("mine")
    assert window.dockWidgetArea(details) == Qt.RightDockWidgetArea  # kept: the user said No
    with pytest.raises(UserError, match="there is already a layout named 'mine'"):
        layouts.save("mine")
    window.removeDockWidget(details)
    window.addDockWidget(Qt.LeftDockWidgetArea, details)
    details.show()
    assert answering(save.trigger, type_name("mine"), click(QMessageBox.Yes)) == []
    window.removeDockWidget(details)
    window.addDockWidget(Qt.RightDockWidgetArea, details)
    layouts.restore("mine")
    assert window.dockWidgetArea(details) == Qt.LeftDockWidgetArea  # replaced
    assert layouts.names().count("mine") == 1
