"""Per-pixel coverage (explorer.model.timeline.lod): exact at every zoom, overlaps counted once."""

from __future__ import annotations

import numpy as np

from explorer.model.timeline.lod import Coverage, fractions_many, merge_overlaps, prefix_sum


def brute_fractions(start, dur, edges):
    """Busy fraction per bin by explicit overlap of every interval with every bin."""
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        ov = np.clip(np.minimum(start + dur, b) - np.maximum(start, a), 0, None).sum()
        out.append(ov / (b - a))
    return np.array(out)


def random_disjoint(rng, n):
    gaps = rng.integers(0, 50, n)
    dur = rng.integers(0, 40, n)
    start = np.cumsum(gaps + np.r_[0, dur[:-1]])
    return start.astype(np.int64), dur.astype(np.int64)


def test_fractions_match_brute_force_at_float_pixel_edges():
    rng = np.random.default_rng(1)
    start, dur = random_disjoint(rng, 400)
    cov = Coverage.build(start, dur)
    for n_px in (7, 113, 2000):
        edges = np.linspace(-13.3, start[-1] + 60.7, n_px + 1)
        np.testing.assert_allclose(cov.fractions(edges), brute_fractions(start, dur, edges), atol=1e-9)


def test_a_row_20_percent_busy_is_20_percent_at_any_zoom():
    start = np.arange(10_000, dtype=np.int64) * 100  # 20 ns busy every 100 ns
    cov = Coverage.build(start, np.full(10_000, 20, dtype=np.int64))
    span = 1_000_000
    for width in (span, span / 40, 10_000, 1000, 300):  # whole periods: exactly 20% busy
        edges = np.linspace(0, width, 1601)
        f = cov.fractions(edges)
        assert abs(f.mean() - 0.2) < 0.01, width
        px = width / 1600
        if px >= 100:  # a pixel holds whole periods: every pixel is 20% busy, give or take one interval
            assert np.all(np.abs(f - 0.2) <= 20 / px + 1e-9), width


def test_overlapping_intervals_count_once():
    start = np.array([0, 10, 20, 100], dtype=np.int64)
    dur = np.array([50, 10, 60, 10], dtype=np.int64)  # union: [0, 80) and [100, 110)
    s, d = merge_overlaps(start, dur)
    assert list(s) == [0, 100] and list(d) == [80, 10]
    cov = Coverage.build(start, dur)
    assert cov.total == 90
    f = cov.fractions(np.array([0.0, 40.0, 80.0, 120.0]))
    np.testing.assert_allclose(f, [1.0, 1.0, 0.25])
    assert cov.busy_in(70, 105) == 15


def test_many_tracks_at_once_equal_one_by_one_and_share_a_prefix_sum():
    rng = np.random.default_rng(2)
    parts = [random_disjoint(rng, n) for n in (50, 0, 300, 7)]
    start = np.concatenate([p[0] for p in parts])
    dur = np.concatenate([p[1] for p in parts])
    cum = prefix_sum(dur)
    bounds = np.cumsum([0] + [len(p[0]) for p in parts])
    shared = [Coverage(start, dur, cum, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    own = [Coverage.build(*p) for p in parts]
    edges = np.linspace(0, 20_000, 501)
    f_many, last_many = fractions_many(shared, edges)
    for i, c in enumerate(own):
        f, last = c.fractions_and_last(edges)
        np.testing.assert_allclose(f_many[i], f)
        np.testing.assert_array_equal(last_many[i], last)
        assert shared[i].total == c.total


def test_last_index_names_the_interval_under_a_covered_pixel():
    start = np.array([0, 100, 200], dtype=np.int64)
    cov = Coverage.build(start, np.array([50, 50, 50], dtype=np.int64))
    f, last = cov.fractions_and_last(np.array([0.0, 60.0, 120.0, 180.0, 240.0]))
    assert list(last) == [0, 1, 1, 2]
    np.testing.assert_allclose(f, [50 / 60, 20 / 60, 30 / 60, 40 / 60])
