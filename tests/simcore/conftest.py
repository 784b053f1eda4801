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


@pytest.fixture
def one_rank_per_chip(tmp_path):
    """one_rank_per_chip(preset) -> a what-if preset file of `preset` whose chips are one logical core
    each (2 cores at LNC=2): collectives between ranks then cross the link tiers only, so tests can
    check the tiers' formulas without the on-chip stage."""

    def make(base: str) -> str:
        path = tmp_path / f"{base}-one-rank.toml"
        path.write_text(f'base = "{base}"\nname = "{base}-one-rank"\ncores_per_chip = 2\n'
                        '[lnc]\ndefault = 2\nchoices = [2]\n')
        return str(path)

    return make
