"""The compiled per-pixel loops draw exactly what the numpy formulas drew, bit for bit.

The timeline's coverage lines (busy fraction and colour of each pixel of each row) are computed
by lod_kernels when numba is there; these compare them with the numpy path (`HAVE_NUMBA` off)
on random lanes at every zoom, from the whole span to edges a fraction of a nanosecond apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.model.timeline import lod
from explorer.model.timeline.lod import Coverage, fractions_many, last_started
from explorer.model.timeline.lod_kernels import HAVE_NUMBA, blend_rgb32

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is what is compared")


@pytest.fixture(autouse=True)
def _compiled_loops_loaded():
    """A window opened earlier in this process may still be loading them (the numpy path meanwhile)."""
    lod.wait_for_compiled_loops()
    assert lod.compiled_loops()


def _numpy(monkeypatch, f, *args):
    with monkeypatch.context() as m:
        m.setattr(lod, "HAVE_NUMBA", False)
        return f(*args)


def _lanes(rng, n_lanes: int = 5) -> list[Coverage]:
    """Disjoint lanes sharing root arrays (as a table's tracks do), one of them empty."""
    covs, starts, durs, lo = [], [], [], 0
    for k in range(n_lanes):
        n = 0 if k == 2 else int(rng.integers(1, 4000))
        gaps = rng.integers(0, 50, n) * (rng.random(n) < 0.7)  # many back to back, some gaps
        dur = rng.integers(1, 200, n)
        start = 1_000 * k + np.cumsum(gaps + np.r_[0, dur[:-1]]) if n else np.zeros(0, np.int64)
        starts.append(start)
        durs.append(dur)
        covs.append((lo, lo + n))
        lo += n
    root_start = np.concatenate(starts).astype(np.int64)
    root_dur = np.concatenate(durs).astype(np.int64)
    cum = lod.prefix_sum(root_dur)
    return [Coverage(root_start, root_dur, cum, a, b) for a, b in covs]


def _edges(rng, covs) -> list[np.ndarray]:
    hi = max(int(c.start[-1] + c.dur[-1]) for c in covs if c.hi > c.lo)
    out = [np.linspace(-500.0, hi + 500.0, 1681)]  # the whole span and beyond
    for width in (1e5, 1e3, 37.3, 2.0, 0.01):  # deeper and deeper, down to many pixels per nanosecond
        t0 = float(rng.uniform(0, hi))
        out.append(t0 + width * (np.arange(1681, dtype=np.float64) / 1680))
    out.append(np.array([3.0, 3.0 + 1e-9, 7.5, 7.5, 9.0]))  # tiny and empty bins
    return out


def test_coverage_and_last_match_numpy_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(16)
    for _ in range(4):
        covs = _lanes(rng)
        for e in _edges(rng, covs):
            got = fractions_many(covs, e)
            want = _numpy(monkeypatch, fractions_many, covs, e)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and np.array_equal(g, w)
            for c in covs:
                assert np.array_equal(last_started(c.start, e), _numpy(monkeypatch, last_started, c.start, e))


def test_blend_matches_the_numpy_blend_bit_for_bit():
    from explorer.ui.palette import pack_rgb32

    rng = np.random.default_rng(3)
    pal = rng.integers(0, 256, (40, 3)).astype(np.float32)
    bg = np.array([27, 29, 35], dtype=np.float32)
    code = rng.integers(0, 40, (30, 1680)).astype(np.int32)
    frac = rng.random((30, 1680))
    frac[:, ::7] = 0.0
    frac[:, ::11] = 1.0
    frac[0] = np.linspace(0, 1, 1680) ** 0.6
    out = np.empty(code.shape, dtype=np.uint32)
    blend_rgb32(pal, code, frac, bg, out)
    assert np.array_equal(out, pack_rgb32(bg + (pal[code] - bg) * frac[:, :, None].astype(np.float32)))


def test_counter_lines_match_numpy_bit_for_bit(monkeypatch):
    from explorer.model.timeline.counter_bins import CounterSeries
    from explorer.ui import canvas_layers
    from explorer.ui.canvas_layers import RowsLayer

    rng = np.random.default_rng(5)
    t = np.cumsum(rng.integers(1, 500, 20_000))
    series = CounterSeries("HBM Read Bandwidth", "B/s", t, rng.random(20_000) * 1e11)
    for t0, width in ((-1e4, 2e7), (float(t[5_000]), 3e4), (float(t[100]), 50.0), (float(t[-1]) - 10, 1e5)):
        bins = series.bins(t0 + width * np.arange(1681) / 1680)
        got = RowsLayer._counter_lines(bins, 38 / series.peak, 120, 1680)
        with monkeypatch.context() as m:
            m.setattr(canvas_layers, "HAVE_NUMBA", False)
            want = RowsLayer._counter_lines(bins, 38 / series.peak, 120, 1680)
        for g, w in zip(got, want):
            assert g.shape == w.shape and np.array_equal(g, w)


def test_counter_bins_match_numpy_bit_for_bit(monkeypatch):
    from explorer.model.timeline import counter_bins
    from explorer.model.timeline.counter_bins import CounterSeries

    rng = np.random.default_rng(7)
    t = np.cumsum(rng.integers(1, 500, 50_000))
    v = rng.random(50_000) * 1e11
    v[::97] = 0.0
    series = CounterSeries("HBM Read Bandwidth", "B/s", t, v)
    spans = [(-1e6, 5e7), (-10.0, 1e3), (float(t[5_000]), 3e4), (float(t[100]), 50.0), (float(t[-1]) - 10, 1e5),
             (float(t[20_000]), 3e6), (float(t[3]) - 0.25, 2.5)]
    for t0, width in spans:
        for e in (t0 + width * np.arange(1681) / 1680, np.r_[float(t[10]), float(t[10]), float(t[11]), t[12:40:3].astype(float)]):
            got = series.bins(e)
            with monkeypatch.context() as m:
                m.setattr(counter_bins, "HAVE_NUMBA", False)
                want = series.bins(e)
            for name in ("min", "max", "mean", "last"):
                g, w = getattr(got, name), getattr(want, name)
                assert np.array_equal(g, w, equal_nan=True), (name, t0, width)


def test_a_sampled_lane_draws_the_same_bit_for_bit(monkeypatch):
    """Long lanes get a sample of their starts (every 64th) on a thread of their own once drawn; the
    frames after it (searching the sample first at wide zooms) equal the frames before and numpy's."""
    rng = np.random.default_rng(64)
    covs = []
    for n in (lod.SAMPLE_MIN * 30 + 17, lod.SAMPLE_MIN + 63):  # the first searched through its sample at full span
        gaps = rng.integers(0, 50, n) * (rng.random(n) < 0.5)
        dur = rng.integers(0, 200, n)  # zero durations too: equal starts
        start = np.cumsum(gaps + np.r_[0, dur[:-1]]).astype(np.int64)
        covs.append(Coverage.build(start, dur.astype(np.int64)))
    hi = max(int(c.start[-1] + c.dur[-1]) for c in covs)
    edges = [np.linspace(-500.0, hi + 500.0, 1681), np.linspace(hi * 0.3, hi * 0.35, 1681),
             np.linspace(-100.0, 3e4, 1681), np.linspace(hi - 3e4, hi + 100.0, 1681), np.linspace(5e3, 5.2e3, 1681)]
    before = [fractions_many(covs, e) for e in edges]
    lod.wait_for_samples()
    assert all(c.sample is not None for c in covs)
    for e, old in zip(edges, before):
        got = fractions_many(covs, e)
        want = _numpy(monkeypatch, fractions_many, covs, e)
        for g, o, w in zip(got, old, want):
            assert np.array_equal(g, o) and np.array_equal(g, w)


def test_counts_through_the_sample_are_searchsorted():
    from explorer.model.timeline.lod_kernels import counts_sampled, sample_starts

    rng = np.random.default_rng(9)
    for n in (1, 63, 64, 65, 5_000, 70_001):
        a = np.sort(rng.integers(0, n * 3, n + 10)).astype(np.int64)  # duplicates included
        lo, hi = 7, 7 + n
        sample = np.empty((n + 63) // 64, np.int64)
        sample_starts(a, lo, hi, sample)
        for keys in (np.linspace(-5, n * 3 + 5, 1681), np.linspace(n, n * 1.1, 1681), np.full(9, n * 1.5),
                     np.linspace(-5, n * 3 + 5, 9)):
            keys = np.floor(keys).astype(np.int64)
            out = np.empty(len(keys), np.int64)
            counts_sampled(a, lo, hi, sample, keys, out)
            assert np.array_equal(out, np.searchsorted(a[lo:hi], keys, side="right"))


def test_a_frame_over_a_mapped_index_needs_no_loop_the_warm_up_missed():
    """A reopened trace's prefix sums are read-only mappings of its saved index while its starts and
    durations are mapped too, or copies: warm() loads every combination, so no frame (the first
    kernel link's included) loads or compiles a loop on the GUI thread."""
    from explorer.model.timeline import lod_kernels

    lod_kernels.warm()
    seen = {f: len(f.signatures) for f in (lod_kernels.coverage_row, lod_kernels.counts_le)}
    rng = np.random.default_rng(5)
    for roots_writable in (True, False):
        for cum_writable in (True, False):
            covs = _lanes(rng, 3)
            for c in covs:
                for a, w in ((c.root_start, roots_writable), (c.root_dur, roots_writable), (c.root_cum, cum_writable)):
                    a.setflags(write=w)
            fractions_many(covs, _edges(rng, covs)[0])
    assert {f: len(f.signatures) for f in seen} == seen


def test_only_the_main_thread_starts_the_lane_sampler():
    """A thread starts with its creator's niceness, and the window's utilisation worker runs nicer than
    the GUI thread: asked from another thread with no sampler running, nothing is queued or marked (the
    frames, on the main thread, ask for the samples themselves); asked from the main thread, the lane
    gets its sample."""
    import threading

    rng = np.random.default_rng(7)
    n = lod.SAMPLE_MIN * 3 + 5
    start = np.cumsum(rng.integers(1, 50, n)).astype(np.int64)
    cov = Coverage.build(start, np.ones(n, np.int64))
    lod.wait_for_samples()
    worker = threading.Thread(target=lod.sample_apart, args=([cov],))
    worker.start()
    worker.join()
    assert lod._sampler is None and not cov._sampling and cov.sample is None
    lod.sample_apart([cov])
    lod.wait_for_samples()
    assert cov.sample is not None
