"""Themes, the shortcuts window, saved settings and the About box, through the real window.

Settings go to a per-test temporary directory (tests/ui/conftest.py `isolated_settings`);
a "restart" is a second MainWindow reading the same settings.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt, qVersion
from PySide6.QtGui import QAction, QKeySequence, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDockWidget

from explorer.ui import open_window
from explorer.ui.themes import THEMES, apply_theme


@pytest.fixture(autouse=True)
def back_to_dark():
    yield
    apply_theme("dark")  # the theme is application-wide: leave the default for other tests


def action(window, name: str) -> QAction:
    found = window.findChild(QAction, name)
    assert found is not None, name
    return found


def luminance(widget) -> float:
    """Mean brightness (0..255) of what the widget paints."""
    image = widget.grab().toImage().convertToFormat(widget.grab().toImage().Format.Format_RGB32)
    arr = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.sizeInBytes()).reshape(image.height(), -1)
    return float(arr[:, : image.width() * 4].reshape(image.height(), image.width(), 4)[..., :3].mean())


def restart(qtbot, old, trace=None):
    """Close a window (it saves its settings) and open a new one, as a user restarting the app."""
    old.close()
    w = open_window(trace)
    qtbot.addWidget(w)
    qtbot.waitExposed(w)
    if trace is not None:
        qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    return w


def test_settings_go_to_the_test_directory_not_the_users(window, tmp_path_factory):
    store = window.recent.store
    assert store.format() == QSettings.IniFormat
    assert str(tmp_path_factory.getbasetemp()) in store.fileName()


def test_light_and_dark_themes_switch_and_persist(qtbot, window, trace_path):
    canvas, plot = window.timeline.canvas, window.utilisation.plot
    dark = luminance(canvas)
    assert dark < 80 and action(window, "action-theme-dark").isChecked()
    action(window, "action-theme-light").trigger()          # View > Theme > Light
    assert action(window, "action-theme-light").isChecked()
    assert QApplication.palette().color(QPalette.Window).name() == THEMES["light"].window
    light = luminance(canvas)
    assert light > 180, (dark, light)                        # the timeline repainted light
    assert plot.backgroundBrush().color().name() == THEMES["light"].plot_background
    assert window.recent.store.value("appearance/theme") == "light"

    w2 = restart(qtbot, window, trace_path)                  # remembered
    assert action(w2, "action-theme-light").isChecked() and luminance(w2.timeline.canvas) > 180
    action(w2, "action-theme-dark").trigger()
    assert luminance(w2.timeline.canvas) < 80
    assert w2.utilisation.plot.backgroundBrush().color().name() == THEMES["dark"].plot_background
    w3 = restart(qtbot, w2)
    assert action(w3, "action-theme-dark").isChecked()


def test_window_layout_and_recent_files_are_restored(qtbot, window, trace_path):
    screen = window.screen().availableGeometry()           # (restoreGeometry keeps a window on its screen)
    size = (min(1234, screen.width() - 40), min(777, screen.height() - 40))
    window.resize(*size)
    legend = window.panels["Legend"]
    legend.close()                                           # the user closes a panel
    window.removeDockWidget(details := window.panels["Details"])
    window.addDockWidget(Qt.LeftDockWidgetArea, details)     # and moves another to the left
    details.show()
    qtbot.wait(20)
    w2 = restart(qtbot, window)
    assert (w2.width(), w2.height()) == size
    assert not w2.panels["Legend"].isVisible()
    assert w2.dockWidgetArea(w2.panels["Details"]) == Qt.LeftDockWidgetArea
    assert w2.recent.paths()[0] == str(trace_path.resolve())
    w2._fill_recent()
    assert w2.recent_menu.actions()[0].text() == str(trace_path.resolve())


def test_shortcuts_window_lists_the_real_shortcuts(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    QTest.keyClick(window, Qt.Key_F1)                        # Help > Keyboard shortcuts
    sw = window.extras.shortcuts_window
    qtbot.waitUntil(lambda: sw is not None and sw.isVisible())
    rows = sw.rows()
    native = lambda seq: QKeySequence(seq).toString(QKeySequence.NativeText)  # noqa: E731
    for expected in [(native(QKeySequence.Open), "Open trace", "File"),
                     (native(QKeySequence.New), "New capture", "File"),
                     ("Ctrl+Shift+R", "Re-run with changes", "File"),
                     ("Home", "Fit whole trace", "View"),
                     (native(QKeySequence.HelpContents), "Keyboard shortcuts", "Help"),
                     (native(QKeySequence.Find), "Find", "window")]:
        assert expected in rows, (expected, rows)
    # every action of the window that has a shortcut is listed, with the shortcut it has now
    listed = {(keys, text) for keys, text, _ in rows}
    for act in window.findChildren(QAction):
        if not act.shortcut().isEmpty():
            assert (act.shortcut().toString(QKeySequence.NativeText), act.text().replace("&", "").rstrip("\u2026")) in listed
    assert "W / S" in sw.timeline_keys.text() and "Shift+drag" in sw.timeline_keys.text()

    # it cannot drift: a changed and an added shortcut show up the next time it opens
    action(window, "action-new-capture").setShortcut(QKeySequence("Ctrl+Alt+N"))
    zoom = window.view_menu.addAction("Zoom to selection")
    zoom.setShortcut(QKeySequence("Ctrl+Shift+Z"))
    sw.close()
    QTest.keyClick(window, Qt.Key_F1)
    qtbot.waitUntil(sw.isVisible)
    rows = sw.rows()
    assert ("Ctrl+Alt+N", "New capture", "File") in rows and ("Ctrl+Shift+Z", "Zoom to selection", "View") in rows
    assert not any(r[1] == "New capture" and r[0] == native(QKeySequence.New) for r in rows)


def test_about_box_shows_the_versions(qtbot, window):
    import numpy
    import pyarrow
    import PySide6
    import pyqtgraph

    import explorer
    from simcore.trace import FORMAT_VERSION

    about_action = action(window, "action-about")
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Help")
    assert about_action in help_menu.actions()
    about_action.trigger()
    box = window.extras.about_dialog
    qtbot.waitUntil(box.isVisible)
    table = {box.table.item(i, 0).text(): box.table.item(i, 1).text() for i in range(box.table.rowCount())}
    assert table["Trn3 Explorer"] == explorer.__version__
    assert table["trace format"] == FORMAT_VERSION
    assert table["Python"].startswith(platform.python_version())
    assert table["Qt"] == qVersion() and table["PySide6"] == PySide6.__version__
    assert table["pyqtgraph"] == pyqtgraph.__version__ and table["numpy"] == numpy.__version__
    assert table["pyarrow"] == pyarrow.__version__
    assert f"Qt: {qVersion()}" in box.text()


def test_rerun_is_offered_only_with_a_trace_open(qtbot):
    w = open_window()
    qtbot.addWidget(w)
    file_menu = next(a.menu() for a in w.menuBar().actions() if a.text().replace("&", "") == "File")
    file_menu.aboutToShow.emit()
    assert not action(w, "action-rerun").isEnabled()
    assert file_menu.actions()[0] is action(w, "action-new-capture")
    assert any(isinstance(d, QDockWidget) for d in w.findChildren(QDockWidget))


def test_cyclic_garbage_is_collected_on_the_gui_thread_not_in_workers(qtbot, window):
    """A worker thread must never run the collector over Qt objects (it deadlocks with the GUI thread)."""
    import gc
    import threading
    import weakref

    from PySide6.QtCore import QObject

    assert not gc.isenabled()
    where: list[str] = []

    class Holder:
        pass

    h = Holder()
    h.obj, h.me = QObject(), h                # a reference cycle holding a Qt object
    weakref.finalize(h, lambda: where.append(threading.current_thread().name))
    del h
    worker = threading.Thread(target=lambda: [[] for _ in range(100_000)], name="worker")  # allocation pressure
    worker.start()
    worker.join()
    assert where == []                        # the worker did not collect it (automatic collection is off)
    gc.collect()                              # what the GUI thread's collector timer does
    assert where == [threading.main_thread().name]


def test_the_collector_skips_a_loaded_trace_and_still_frees_it_when_another_opens(qtbot, window, trace_path):
    """A full collection over a big trace's objects blocked the GUI thread for 120 ms: once the
    analyses are in, what is alive is frozen (gc.freeze); opening another trace thaws it, and the
    first trace's analyses are freed, cycles included."""
    import gc
    import weakref

    from explorer.ui import gc_guard
    from ui.analysis_helpers import ready

    p = ready(window, qtbot)
    assert gc.get_freeze_count() > len(gc.get_objects())  # collections look at far fewer objects than are alive
    first = p.session.analysis
    gone = weakref.ref(first)
    first.self_cycle = first  # a reference cycle among the frozen objects: only the collector frees it
    gc_guard.settle()
    del first
    gc.collect()
    assert gone() is not None  # still shown
    window.open_path(trace_path)
    qtbot.waitUntil(lambda: p.session.analysis is not None and p.session.analysis is not gone(), timeout=60_000)
    assert gone() is None
