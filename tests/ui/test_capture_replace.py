"""The capture dialog's "replace an existing trace" follows `trnx capture --overwrite`'s rules
(issue 12): only a trace trnx wrote is replaced; anything else is refused with the CLI's sentence
under the form, and what appears during the run is never replaced (one sentence in a dialog)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox

import simcore.capture as sc
import simcore.capture.engine as engine
from simcore.trace import open_trace
from ui.test_capture_dialog import cli_error, settle, tick

GEMM = {"workload": "gemm", "shape": "256,256,256"}


def dialog_for(qtbot, tmp_path, out):
    from explorer.ui.capture_dialog import CaptureDialog

    dialog = CaptureDialog(directory=tmp_path, initial={**GEMM, "output": str(out)})
    qtbot.addWidget(dialog)
    dialog.show()
    tick(dialog.overwrite)
    settle(qtbot, dialog)
    return dialog


@pytest.mark.parametrize("make", [
    lambda p: (p.mkdir(), (p / "docs").mkdir(), (p / "docs" / "f").write_text("x")),
    lambda p: p.write_text("my notes"),
    lambda p: (sc.capture(GEMM, p), (p / "notes.txt").write_text("mine")),
])
def test_replace_refuses_what_trnx_did_not_write(qtbot, tmp_path, make):
    out = tmp_path / "taken.trnx"
    make(out)
    dialog = dialog_for(qtbot, tmp_path, out)
    assert dialog.overwrite.isChecked()
    assert dialog.error_label.text() == cli_error("--workload", "gemm", "--shape", "256,256,256", "-o", str(out),
                                                  "--overwrite")
    assert "--overwrite replaces only a trace trnx wrote, so it was left alone" in dialog.error_label.text()
    assert not dialog.run_button.isEnabled()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    assert dialog.worker is None and out.exists()


def test_replace_of_a_trace_that_gains_a_users_file_during_the_run_fails_in_one_sentence(qtbot, tmp_path, monkeypatch):
    out = sc.capture(GEMM, tmp_path / "run.trnx")
    real = engine.simulate

    def simulate(*args, **kwargs):
        (out / "notes.txt").write_text("mine")  # written while the capture runs
        return real(*args, **kwargs)
    monkeypatch.setattr(engine, "simulate", simulate)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    dialog = dialog_for(qtbot, tmp_path, out)
    assert dialog.run_button.isEnabled(), dialog.error_label.text()
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.running, timeout=60_000)
    sentence = (f"{out} holds notes.txt, which trnx did not write; --overwrite replaces only a trace trnx wrote, "
                "so it was left alone (move notes.txt out of it, or choose another name).")
    assert shown == [("Capture failed", sentence)]
    assert (out / "notes.txt").read_text() == "mine"
    open_trace(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.trnx"]


def test_replace_of_a_trace_of_ours_replaces_it(qtbot, tmp_path):
    out = sc.capture(GEMM, tmp_path / "run.trnx")
    (out / "timeline-index.cache").write_bytes(b"disposable")
    dialog = dialog_for(qtbot, tmp_path, out)
    dialog.show_error_dialogs = False
    QTest.mouseClick(dialog.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.running, timeout=60_000)
    assert dialog.error_label.text() == ""
    assert not (out / "timeline-index.cache").exists()
    open_trace(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.trnx"]
