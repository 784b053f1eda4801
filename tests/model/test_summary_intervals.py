"""The grouped interval primitives the summary relies on, against brute force."""

from __future__ import annotations

import numpy as np

from explorer.model.intervals import overlap_fraction, overlaps, sum_per_group, union_length_per_group


def test_grouped_union_matches_brute_force_on_random_intervals():
    rng = np.random.default_rng(7)
    n, groups = 400, 6
    g = rng.integers(0, groups, n)
    s = rng.integers(0, 500, n)
    e = s + rng.integers(0, 40, n)
    got = union_length_per_group(g, s, e, groups)
    for k in range(groups):
        covered = set()
        for a, b in zip(s[g == k], e[g == k]):
            covered.update(range(a, b))
        assert got[k] == len(covered)


def test_sum_per_group_is_exact_for_large_int64():
    g = np.array([2, 0, 2])
    v = np.array([2**60, 5, 3], dtype=np.int64)
    assert sum_per_group(g, v, 3).tolist() == [5, 0, 2**60 + 3]


def test_overlap_fraction_and_zero_length_intervals():
    s = np.array([0, 10, 50, 100])
    e = np.array([100, 10, 50, 200])
    assert overlap_fraction(s, e, 50, 150).tolist() == [0.5, 0.0, 1.0, 0.5]
    assert overlaps(s, e, 50, 150).tolist() == [True, False, True, True]


def test_track_group_union_matches_plain_union():
    from explorer.model.intervals import union_length_by_track_groups

    rng = np.random.default_rng(3)
    rows = []
    for track in range(5):  # tracks 0,1 share group 0 (like Tensor + TensorMatrix); track 4 overlaps itself
        d = rng.integers(1, 30, 50)
        gap = rng.integers(0, 20, 50) if track != 4 else -rng.integers(0, 10, 50)
        s = np.maximum(np.cumsum(d + gap) - d, 0)
        s = np.maximum.accumulate(s)
        rows.append((np.full(50, track), s, s + d))
    track = np.concatenate([r[0] for r in rows])
    start = np.concatenate([r[1] for r in rows])
    end = np.concatenate([r[2] for r in rows])
    group_of_track = np.array([0, 0, 1, 2, 3])
    want = union_length_per_group(group_of_track[track], start, end, 4)
    assert union_length_by_track_groups(track, group_of_track, start, end, 4).tolist() == want.tolist()
    shuffled = rng.permutation(len(track))  # not grouped by track: falls back to the exact union
    got = union_length_by_track_groups(track[shuffled], group_of_track, start[shuffled], end[shuffled], 4)
    assert got.tolist() == want.tolist()


def test_covered_by_runs():
    from explorer.model.intervals import covered_by_runs

    rg, rs, re = np.array([0, 0, 2]), np.array([0, 100, 0]), np.array([50, 200, 10])
    g = np.array([0, 0, 0, 1, 2, 2])
    s = np.array([10, 40, 150, 0, 0, 5])
    e = np.array([20, 60, 200, 5, 10, 11])
    assert covered_by_runs(g, s, e, rg, rs, re).tolist() == [True, False, True, False, True, False]


def test_mean_concurrency_against_brute_force():
    from explorer.model.intervals import mean_concurrency

    rng = np.random.default_rng(5)
    g = rng.integers(0, 3, 60)
    s = rng.integers(0, 200, 60)
    e = s + rng.integers(1, 50, 60)
    got = mean_concurrency(g, s, e)
    for i in range(60):
        same = g == g[i]
        per_ns = [int(((s[same] <= t) & (e[same] > t)).sum()) for t in range(s[i], e[i])]
        assert got[i] == np.mean(per_ns)
    assert mean_concurrency(np.array([0, 0]), np.array([0, 10]), np.array([10, 20])).tolist() == [1.0, 1.0]


def test_engine_activity_slices_agree_with_the_generic_path():
    from explorer.model.analysis.engine_time import _generic, engine_activity
    from explorer.model.intervals import union_runs_per_group

    rng = np.random.default_rng(11)
    tids, starts, ends = [], [], []
    for track in (3, 0, 1, 2, 4):  # grouped by track, not in id order; track 2 overlaps itself
        d = rng.integers(0, 30, 80)
        s = np.cumsum(rng.integers(0, 25, 80) + (d if track != 2 else 0))
        tids.append(np.full(80, track))
        starts.append(s)
        ends.append(s + d)
    tid, start, end = np.concatenate(tids), np.concatenate(starts), np.concatenate(ends)
    group_of_track = np.array([0, 0, 1, 2, 5])  # tracks 0 and 1: one engine on two rows; 5: not an engine
    unit_of_track = np.array([1, 1, 1, 1, 2])
    ku, ks, ke = np.array([1, 1, 2]), np.array([0, 900, 0]), np.array([600, 5000, 100])
    runs = union_runs_per_group(ku, ks, ke)
    fast = engine_activity(tid, start, end, group_of_track, unit_of_track, 6, runs)
    slow = _generic(tid, start, end, group_of_track, unit_of_track, 6, runs)
    assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()

    def covered(parts):
        return sorted((int(u), int(s), int(e)) for p in parts for u, s, e in zip(*p))

    assert covered(fast[2]) == covered(slow[2]) and covered(fast[2])
