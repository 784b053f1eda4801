"""Deep links in the window: `trnx view --goto`, View > Copy link, and the summary's links."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from explorer.cli.commands.view import open_explorer
from simcore.errors import UserError


def test_goto_when_loaded_selects_the_kernel(qtbot, trace_path):
    from explorer.ui import open_window

    w = open_window(None)
    qtbot.addWidget(w)
    w.tools.go_when_loaded("kernel:1")
    w.open_path(trace_path)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    ref = w.view.selected
    assert ref is not None and w.view.index.event_name(ref) == "softmax"
    vp = w.view.viewport
    assert vp.t0 <= 50_000 and 100_000 <= vp.t1 and w.view.node == "kernel:1"


def test_copy_link_round_trips(window, qtbot):
    window.tools.go_to_link("instruction:50")
    action = window.findChild(QAction, "action-copy-link")
    window.activateWindow()
    QTest.keyClick(window.timeline.canvas, Qt.Key_C, Qt.ControlModifier | Qt.ShiftModifier)
    text = QApplication.clipboard().text()
    assert text == f"trnx view {window.loaded.path} --goto instruction:50" and action.shortcut().toString() == "Ctrl+Shift+C"
    window.view.select(None)
    window.view.viewport.set_range(20_000, 30_000)
    action.trigger()
    link = QApplication.clipboard().text().split("--goto ")[1]
    assert link == "t=20us:30us"
    window.view.viewport.set_range(0, 100_000)
    window.tools.go_to_link(link)
    assert (window.view.viewport.t0, window.view.viewport.t1) == (20_000, 30_000)


def test_a_link_the_trace_lacks_is_one_sentence(window):
    window.show_error_dialogs = False
    try:
        window.tools.go_to_link("kernel:42")
    except UserError as exc:
        assert str(exc) == "this trace has no kernel with id 42."
    else:
        raise AssertionError("no error")


def test_view_cli_goto_smoke_test(qtbot, trace_path, capsys):
    assert open_explorer(str(trace_path), True, goto="op:attention.softmax") == 0
    out = capsys.readouterr().out
    assert "at op:attention.softmax, showing" in out
    t0, t1 = (float(x) for x in out.split("showing ")[1].split(" ns")[0].split(".."))
    assert t0 <= 50_000 and t1 >= 100_000
    try:
        open_explorer(str(trace_path), True, goto="dma:1")
    except UserError as exc:
        assert "no DMA transfer with id 1" in str(exc)
    else:
        raise AssertionError("no error")


def test_a_copied_link_to_a_trace_under_a_path_with_spaces_runs_as_pasted(qtbot, trace_path, tmp_path):
    """The copied command line quotes the trace's path, so pasted into a shell it opens that trace there."""
    import shlex
    import shutil

    from clirun import trnx

    from explorer.ui import open_window

    spaced = shutil.copytree(trace_path, tmp_path / "my traces" / "run (1).trnx")
    w = open_window(spaced)
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    w.tools.go_to_link("instruction:50")
    w.findChild(QAction, "action-copy-link").trigger()
    argv = shlex.split(QApplication.clipboard().text())  # as the shell splits it
    assert argv == ["trnx", "view", str(spaced), "--goto", "instruction:50"]
    code, out, err = trnx(*argv[1:], "--smoke-test")
    assert code == 0 and "at instruction:50" in out, err


def test_a_smoke_test_leaves_no_window_or_work_behind(qtbot, trace_path):
    """`trnx view --smoke-test` (and the in-process runs above, two in one test) deletes its window on
    the way out, passed or refused: a closed window used to stay alive with its results still queued
    (16 for this trace), delivered into whatever ran next -- the next smoke test's load loop -- and the
    window was collected whenever the GUI thread's collector got to it."""
    from explorer.ui import worker

    def main_windows() -> set[int]:
        return {id(w) for w in QApplication.topLevelWidgets() if w.objectName() == "main-window"}

    before = main_windows()  # (other tests' windows, if any)
    assert open_explorer(str(trace_path), True, goto="op:attention.softmax") == 0
    assert main_windows() <= before
    try:
        open_explorer(str(trace_path), True, goto="dma:1")
    except UserError:
        pass
    assert main_windows() <= before
    qtbot.waitUntil(lambda: not worker.pending(), timeout=20_000)  # what still arrives for them is dropped (an
    # exception delivering it would fail this test: pytest-qt reports exceptions raised in the event loop)
