"""The one fluid time-slice ledger (simcore/timing/fluid.py): a transfer alone takes its idle time,
shares what others leave, stops at the ledger's end for its caller, and means the same inside a
chip (DMA engines, listsched) as between chips (links)."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.collectives.links import LinkLedger
from simcore.timing.fluid import NO_TALLY, advance
from simcore.timing.listsched import Sharing, Throttle, schedule


def _one_row(slices: int = 100, cap: float = 100.0) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((1, slices)), np.array([cap])


def _go(used, cap, t, W, need, served=None):
    served = np.zeros((2, used.shape[1])) if served is None else served
    res, nd = np.zeros(1, np.int64), np.array([need])
    tally, rest, frac = np.array([0]), np.array([1]), np.array([0.25])
    return advance(t, 1.0, W, 0.0, 10.0, used, cap, res, nd, tally, frac, rest, served, 1), served


def test_alone_a_transfer_takes_its_idle_time_and_tallies_its_bytes():
    used, cap = _one_row()
    (end, left), served = _go(used, cap, 5.0, 200.0, 1000.0)   # 5 B/ns of a 10 B/ns row
    assert (end, left) == (pytest.approx(205.0), 0.0)
    assert served[0].sum() == pytest.approx(250.0) and served[1].sum() == pytest.approx(750.0)


def test_a_second_transfer_gets_what_the_first_leaves():
    used, cap = _one_row()
    (first, _), _ = _go(used, cap, 0.0, 100.0, 800.0)    # 8 of the row's 10 B/ns for 100 ns
    (second, _), _ = _go(used, cap, 0.0, 100.0, 800.0)   # 2 B/ns meanwhile (200 B), then all it wants
    assert first == pytest.approx(100.0) and second == pytest.approx(100.0 + 600.0 / 8.0)
    assert used.max() <= cap[0] * (1 + 1e-12)


def test_a_transfer_past_the_ledger_stops_with_what_is_left():
    used, cap = _one_row(slices=10)                      # 100 ns of ledger
    (end, left), _ = _go(used, cap, 50.0, 200.0, 100.0)
    assert end == pytest.approx(100.0) and left == pytest.approx(0.75)
    res = np.zeros(1, np.int64)
    none = np.full(1, NO_TALLY)
    assert advance(0.0, 1.0, 0.0, 0.0, 10.0, used, cap, res, np.ones(1), none, np.ones(1), none, used, 1) == (0.0, 0.0)


def test_the_chips_dma_engines_and_the_links_share_the_same_way():
    """Three overlapping transfers on one core's DMA engines (the scheduler's ledger) and the same
    three on one chip's link (the collectives' ledger) end at the same times, to the bit."""
    starts, durs, fracs = [0.0, 30.0, 45.0], [100.0, 80.0, 60.0], [0.5, 1.0, 0.75]
    n, slice_ns = len(starts), 8.0
    used, cap = Sharing.ledger(1, 200, slice_ns, 1.0)
    sharing = Sharing(dma_grp=np.zeros(n, np.int32), hbm_bytes=np.zeros(n), read_frac=np.zeros(n),
                      weight=np.ones(1), used=used, cap=cap, slice_ns=slice_ns, eng_frac=np.array(fracs))
    # each on its own queue, released at its start by a latency
    _, end, _, _ = schedule(np.arange(n, dtype=np.int32), np.array(durs), np.array(starts), np.zeros(n + 1, np.int64),
                            np.zeros(0, np.int64), np.full(n, -1, np.int32), n, 0.0, Throttle(), 1, sharing)
    links = LinkLedger(1, np.array([1.0]), slice_ns, 1600.0)   # 1 B/ns out and in: an engine-ns per ns
    ends = [links.flow(s, d, np.array([0]), np.array([[d * f]]), np.zeros((1, 1))) for s, d, f in zip(starts, durs, fracs)]
    assert list(end) == ends
    assert ends[0] == pytest.approx(100.0) and ends[2] > starts[2] + durs[2]   # the later ones were slowed
