"""Tests never write the user's settings: recent files and window state of every test, in this
process or in a `trnx view` subprocess, go to the run's private XDG_CONFIG_HOME
(tests/user_settings.py), and the run fails at its end if one of its paths reached the real file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import user_settings
from PySide6.QtCore import QSettings

from explorer.ui.recent import RecentFiles


def real_settings_text() -> str:
    return user_settings.REAL_SETTINGS.read_text(errors="replace") if user_settings.REAL_SETTINGS.is_file() else ""


def test_the_run_has_its_own_config_home_and_not_the_users():
    assert Path(os.environ["XDG_CONFIG_HOME"]) == user_settings.CONFIG_HOME and user_settings.CONFIG_HOME.is_dir()
    assert not user_settings.REAL_SETTINGS.is_relative_to(user_settings.CONFIG_HOME)


def test_a_trnx_view_subprocess_records_its_trace_in_the_private_settings_not_the_users(trace_path):
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "view", str(trace_path), "--smoke-test"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    private = RecentFiles(QSettings(str(user_settings.PRIVATE_SETTINGS), QSettings.IniFormat))
    assert str(trace_path.resolve()) in private.paths()
    assert str(trace_path.parent) not in real_settings_text()


def test_the_end_of_run_check_names_test_paths_found_in_a_settings_file(tmp_path):
    ini = tmp_path / "explorer.ini"
    ini.write_text(f"[General]\nrecent_traces={tmp_path}/run/x.trnx, /home/me/mine.trnx\n")
    assert user_settings.lines_naming(ini, tmp_path / "run") == [f"recent_traces={tmp_path}/run/x.trnx, /home/me/mine.trnx"]
    assert user_settings.lines_naming(ini, tmp_path / "other") == []
