"""`trnx view SWEEP_DIR` and File > Open on a sweep: the sweep window opens, as File > Open sweep
does, instead of "not a trace"; what cannot be a sweep's view is one sentence."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QApplication, QFileDialog

from explorer.cli.main import cli
from explorer.sweep.run import run_sweep
from simcore.errors import UserError

FIXED = {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1}


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("view-sweep") / "sweep"
    run_sweep(out, FIXED, ["tp=4,8,3"], workers=1)   # two captures and a refusal
    return out


@pytest.mark.parametrize("which", ["directory", "results.parquet"])
def test_trnx_view_of_a_sweep_shows_the_sweep_window(qapp, sweep_dir, tmp_path, which):
    target = sweep_dir if which == "directory" else sweep_dir / "results.parquet"
    png = tmp_path / "sweep.png"
    res = CliRunner().invoke(cli, ["view", str(target), "--smoke-test", "--theme", "light", "--screenshot", str(png)])
    assert res.exit_code == 0, res.output
    assert "trnx view: sweep window built, 3 of 3 configurations in its table, 2 plotted" in res.output
    image = QImage(str(png))
    assert (image.width(), image.height()) == (1920, 1080)
    assert image.pixelColor(5, 5).lightness() > 200   # the light theme, as asked


def test_file_open_and_a_drop_of_a_sweep_open_its_window(qtbot, sweep_dir, monkeypatch):
    from explorer.ui import open_window

    w = open_window()
    qtbot.addWidget(w)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(sweep_dir)))
    open_action = next(a for a in w.menuBar().actions()[0].menu().actions() if a.text().startswith("&Open trace"))
    open_action.trigger()
    assert len(w.sweeps.windows) == 1
    sweep = w.sweeps.windows[0]
    qtbot.addWidget(sweep)
    qtbot.waitExposed(sweep)
    assert sweep.model.rowCount() == 3 and "3 of 3 configurations finished" in sweep.heading.text()
    assert w.loader is None and w.loaded is None   # no attempt to read it as a trace

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(sweep_dir / "results.parquet"))])
    QApplication.sendEvent(w, QDragEnterEvent(QPointF(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    QApplication.sendEvent(w, QDropEvent(QPointF(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    assert len(w.sweeps.windows) == 2
    qtbot.addWidget(w.sweeps.windows[1])
    assert w.sweeps.windows[1].sweep.path == sweep_dir


def test_what_is_not_a_viewable_sweep_is_one_sentence(sweep_dir, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(sweep_dir / "results.parquet", lone / "results.parquet")   # results without their sweep.json
    for args, message in (
            ([str(lone)], f"{lone} holds no sweep.json; it is not a sweep directory (trnx sweep -o DIR writes one)."),
            ([str(sweep_dir), "--goto", "kernel:3"], f"--goto points into a trace and {sweep_dir} is a sweep; open the "
                                                     "sweep and click a configuration, or give that configuration's trace."),
            ([str(sweep_dir), "--smoke-test", "--timings"], f"--timings measures opening a trace and {sweep_dir} is a "
                                                            "sweep; give one of its traces.")):
        res = CliRunner().invoke(cli, ["view", *args])
        assert isinstance(res.exception, UserError) and str(res.exception) == message, res.output
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", "view", str(lone), "--smoke-test"],
                          capture_output=True, text=True, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == f"trnx: error: {lone} holds no sweep.json; it is not a " \
                                                            "sweep directory (trnx sweep -o DIR writes one)."
