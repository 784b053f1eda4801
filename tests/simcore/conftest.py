"""Shared helpers for the simulator tests: capture into a temp dir and open the trace."""

from __future__ import annotations

import itertools

import pytest

import simcore
from simcore.trace import open_trace

_n = itertools.count()


@pytest.fixture
def cap(tmp_path):
    """cap(**options) -> the validated Trace of a capture written under tmp_path."""

    def run(**options):
        path = tmp_path / f"run{next(_n)}.trnx"
        simcore.capture(out_path=path, **options)
        return open_trace(path)

    return run
