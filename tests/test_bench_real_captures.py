"""bench/real_captures.py: the `trnx view` windows it times open with the bench's own settings (a
fresh default layout each run), not whatever window size and docks the user's settings file last saved."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import real_captures  # noqa: E402
from private_settings import use_private_settings  # noqa: E402


def test_the_commands_it_runs_read_its_private_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "the-users"))  # (restored after the test)
    home = use_private_settings()  # what main() does first
    r = real_captures.run(["-c", "import os; print(os.environ['XDG_CONFIG_HOME'])"], python=True)
    assert r["stdout"].strip() == home != str(tmp_path / "the-users")
    r = real_captures.run(["-c", "import os; print(os.environ['QT_QPA_PLATFORM'])"], python=True)
    assert r["stdout"].strip() == "offscreen"
