"""Shared test setup: Qt runs offscreen (CI has no display); the in-process `trnx` fixture (clirun.py)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture
def trnx():
    """`trnx(*args)` -> (code, out, err), run in this process (tests/clirun.py)."""
    import clirun

    return clirun.trnx
