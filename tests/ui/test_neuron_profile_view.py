"""A Neuron Explorer profile in the window: `trnx view PROFILE_DIR`, File > Open / Open recent of a
profile directory and an imported trace all load, with a row per physical core's engines and the
imported counters drawn; the recent-files list names the profile, never a temporary import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import user_settings
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog

from explorer.interop.neuron_profile import import_neuron_profile
from explorer.ui.recent import RecentFiles
from interop.neuron_profiles import write_ranks


def test_imported_profile_opens_in_the_window(qtbot, tmp_path: Path) -> None:
    from explorer.ui import open_window

    write_ranks(tmp_path / "prof", ranks=2, layers=1)
    out = tmp_path / "run.trnx"
    import_neuron_profile([tmp_path / "prof"], out)
    w = open_window(out)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    index = w.loaded.index
    engine_rows = {(i.chip, i.core, i.name) for tid, i in index.tracks.items() if tid in index.lanes and i.kind == "tensor_matrix"}
    assert engine_rows == {(c, p, "TensorMatrix") for c in (0, 1) for p in (0, 1)}
    names = {index.tracks[t].name for t in index.counters}
    assert {"HBM Bandwidth", "Throttling", "State Buffer Utilisation"} <= names
    assert index.kernel_ops is not None and index.tables["kernels"].n == 2 * 2 * 3  # (rank, core, hlo)


def test_view_opens_a_profile_directory_directly(tmp_path: Path) -> None:
    write_ranks(tmp_path / "prof", ranks=1, layers=1)
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "view", str(tmp_path / "prof"), "--smoke-test"],
                       capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    assert "first frame rendered" in r.stdout
    assert sorted(p.name for p in (tmp_path / "prof").iterdir()) == ["rank_0"]  # nothing written beside the profile
    recent = RecentFiles(QSettings(str(user_settings.PRIVATE_SETTINGS), QSettings.IniFormat)).paths()
    assert recent[0] == str((tmp_path / "prof").resolve())  # the profile, not its import (gone at exit)
    assert not any("trnx-profile-" in p for p in recent)


def test_file_open_and_open_recent_of_a_profile_directory_import_it(qtbot, monkeypatch, tmp_path: Path) -> None:
    from explorer.ui import open_window

    prof = write_ranks(tmp_path / "prof", ranks=2, layers=1)
    w = open_window()
    qtbot.addWidget(w)
    w.show_error_dialogs = False  # a failure is asserted below, not a modal dialog
    failed: list[str] = []
    w.load_failed.connect(failed.append)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(prof)))
    next(a for a in w.menuBar().actions()[0].menu().actions() if a.text().startswith("&Open trace")).trigger()
    qtbot.waitUntil(lambda: w.loaded is not None or bool(failed), timeout=20_000)
    assert failed == []
    assert w.loaded.index.tables["kernels"].n == 2 * 2 * 3 and w.loaded.index.trace.meta["simulator"]["is_simulation"] is False
    assert w.windowTitle().startswith("prof.trnx")
    w.close_trace()
    w._fill_recent()
    recent = w.recent_menu.actions()
    assert recent[0].text() == str(prof.resolve())
    recent[0].trigger()  # opens the profile again, through a new import
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    assert w.loaded.index.tables["kernels"].n == 2 * 2 * 3
    assert sorted(p.name for p in prof.iterdir()) == ["rank_0", "rank_1"]  # nothing written beside the profile


def test_compare_window_aligns_measured_and_simulated_by_name(qtbot, monkeypatch, tmp_path: Path) -> None:
    """File > Compare with...: a measured profile (A) against the simulation (B) opens on the By name tab,
    the op the measurement made slower first."""
    from PySide6.QtWidgets import QFileDialog

    from explorer.export import FORMATS
    from interop.test_measured_vs_simulated import SIM, SLOW, as_measured
    from simcore.trace import open_trace
    from ui.analysis_helpers import open_ready

    FORMATS["neuron-explorer"](open_trace(SIM), tmp_path / "prof", {})
    as_measured(tmp_path / "prof")
    import_neuron_profile([tmp_path / "prof"], tmp_path / "measured.trnx")
    w, p = open_ready(qtbot, tmp_path / "measured.trnx")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(SIM)))
    file_menu = w.menuBar().actions()[0].menu()
    next(a for a in file_menu.actions() if a.objectName() == "action-compare").trigger()
    view = p.compare_windows[0]
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.diff is not None, timeout=60_000)
    assert view.tabs.currentWidget() is view.views["compare-by-name"]
    assert "(measured)" in view.headline.text() and "(simulated)" in view.headline.text()
    model = view.by_name
    first_op = next(model.record(r) for r in range(model.rowCount()) if model.record(r)["level"] == "op" and model.record(r)["status"] == "matched")
    assert first_op["name"] == SLOW and first_op["ratio"] < 0.5
