"""Shared test setup: Qt runs offscreen (CI has no display); the user's settings are never
touched (tests/user_settings.py: a private XDG_CONFIG_HOME for the run, inherited by every
subprocess, and a check at the end); the in-process `trnx` fixture (clirun.py)."""

from __future__ import annotations

import os

import pytest
import user_settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
user_settings.isolate()


def pytest_sessionfinish(session, exitstatus):
    """Fail the run when a test wrote one of its paths into the user's settings (isolation broke)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    leaked = user_settings.lines_naming(user_settings.REAL_SETTINGS, factory.getbasetemp())
    if leaked:
        print(f"\ntests wrote into the user's settings {user_settings.REAL_SETTINGS}: {leaked[0][:200]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def trnx():
    """`trnx(*args)` -> (code, out, err), run in this process (tests/clirun.py)."""
    import clirun

    return clirun.trnx
