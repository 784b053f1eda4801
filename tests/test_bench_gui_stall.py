"""bench/gui_stall.py's timed QApplication (`tools_gui.py --profile-qt`) delivers every event.

PySide finds a wrapper by its C++ address, and keeps the wrapper of an event Qt has deleted
for as long as Python refers to it: a widget Qt then makes at that address reached the
Python `notify` as that stale wrapper (a receiver typed QEvent), and `QApplication.notify`
refused it with a TypeError, so the event was lost and the error surfaced in the caller.
Runs in a process of its own: the timed app must be the process's first QApplication.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    sys.path[:0] = [sys.argv[1] + "/bench", sys.argv[1]]
    from gui_stall import timed_app
    app = timed_app()
    app.recording = True
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QComboBox, QTableWidget, QTabWidget

    kept = []

    class Keeper(QObject):  # Python keeping events, as a sampled frame, a traceback or a library can
        def eventFilter(self, obj, event):
            kept.append(event)
            return False

    keeper = Keeper()
    app.installEventFilter(keeper)
    for i in range(60):
        w = QTabWidget()
        for j in range(3):
            w.addTab(QTableWidget(5, 5), f"t{j}")
        combo = QComboBox()
        combo.addItems(["a", "b"])
        w.addTab(combo, "c")
        w.show()
        app.processEvents()
        assert combo.count() == 2 and w.count() == 4
        w.close()
        w.deleteLater()
        app.processEvents()
    print("delivered", len(kept))
""")


def test_timed_app_delivers_events_to_objects_made_where_a_kept_event_was():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], capture_output=True, text=True, env=env,
                         timeout=240, cwd=ROOT)
    assert "TypeError" not in res.stderr, res.stderr[-2000:]
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("delivered ")
