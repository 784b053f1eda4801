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
