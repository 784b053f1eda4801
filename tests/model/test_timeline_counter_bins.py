"""Counter binning: min/max/mean/last per pixel, peaks never hidden."""

from __future__ import annotations

import numpy as np

from explorer.model.timeline.counter_bins import CounterSeries


def brute(series, edges):
    """Values held in each bin: the one in effect at its left edge plus samples inside."""
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        held = np.searchsorted(series.time, np.floor(a), side="right") - 1
        inside = np.flatnonzero((series.time > a) & (series.time < b))
        idx = sorted(set(([held] if held >= 0 else []) + list(inside)))
        out.append((min(series.value[idx]), max(series.value[idx])) if idx else (np.nan, np.nan))
    return np.array(out)


def test_min_max_against_brute_force():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.integers(1, 30, 500)).astype(np.int64)
    s = CounterSeries("x", "GB/s", t, rng.random(500) * 100)
    edges = np.linspace(t[0] - 50.5, t[-1] + 40.25, 97)
    b = s.bins(edges)
    want = brute(s, edges)
    np.testing.assert_allclose(b.min, want[:, 0])
    np.testing.assert_allclose(b.max, want[:, 1])


def test_a_one_sample_spike_survives_coarse_binning():
    n = 1_000_000
    t = np.arange(n, dtype=np.int64) * 10
    v = np.full(n, 5.0)
    v[654_321] = 4900.0
    s = CounterSeries("HBM Read Bandwidth", "GB/s", t, v)
    b = s.bins(np.linspace(0, n * 10, 801))  # 1250 samples per pixel: the pyramid is used
    assert np.nanmax(b.max) == 4900.0
    assert int(np.nanargmax(b.max)) == 654_321 * 10 * 800 // (n * 10)
    assert np.nanmin(b.min) == 5.0


def test_time_weighted_mean_and_value_at():
    s = CounterSeries("r", "GB/s", np.array([0, 50, 100], dtype=np.int64), np.array([100.0, 300.0, 0.0]))
    assert s.mean_in(0, 100) == 200.0
    assert s.mean_in(25, 75) == 200.0
    assert s.value_at(49.9) == 100.0 and s.value_at(50) == 300.0 and s.value_at(-1) is None
    b = s.bins(np.array([-10.0, 0.0, 50.0, 100.0]))
    assert np.isnan(b.max[0])  # before the first sample
    np.testing.assert_allclose(b.mean[1:], [100.0, 300.0])
    np.testing.assert_allclose(b.last[1:], [100.0, 300.0])
