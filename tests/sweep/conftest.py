"""Fixtures of the sweep tests (the shared sweep is described in sweep/cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.cases import FIXED, GRID, trnx


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> Path:
    """The sweep run in one process, traces kept: what every other way of running must match."""
    out = tmp_path_factory.mktemp("sweep-reference") / "sweep"
    proc = trnx("sweep", *FIXED, *GRID, "--workers", "1", "--keep-traces", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out
