"""A Neuron Explorer profile in the window: `trnx view PROFILE_DIR` and an imported trace both load,
with a row per physical core's engines and the imported counters drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from explorer.interop.neuron_profile import import_neuron_profile
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
    assert index.hierarchy is not None and index.tables["kernels"].start.size == 2 * 2 * 3  # (rank, core, hlo)


def test_view_opens_a_profile_directory_directly(tmp_path: Path) -> None:
    write_ranks(tmp_path / "prof", ranks=1, layers=1)
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "view", str(tmp_path / "prof"), "--smoke-test"],
                       capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    assert "first frame rendered" in r.stdout
    assert sorted(p.name for p in (tmp_path / "prof").iterdir()) == ["rank_0"]  # nothing written beside the profile
