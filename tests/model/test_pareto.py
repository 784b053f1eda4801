"""The Pareto front (explorer.model.analysis.pareto) against a brute-force dominance check."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.model.analysis.pareto import pareto_front


def brute_force(x, y, hx, hy):
    a, b = (x if hx else -x), (y if hy else -y)
    keep = []
    for i in range(len(x)):
        if not (np.isfinite(x[i]) and np.isfinite(y[i])):
            continue
        dominated = any(np.isfinite(a[j]) and np.isfinite(b[j]) and a[j] >= a[i] and b[j] >= b[i]
                        and (a[j] > a[i] or b[j] > b[i] or j < i) for j in range(len(x)) if j != i)
        if not dominated:
            keep.append(i)
    return sorted(keep, key=lambda i: (x[i], i))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("hx, hy", [(True, True), (False, True), (True, False), (False, False)])
def test_front_is_exactly_the_non_dominated_points_ordered_by_x(seed, hx, hy):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 8, 30).astype(float)   # small integers: ties and duplicates on purpose
    y = rng.integers(0, 8, 30).astype(float)
    x[rng.integers(0, 30, 3)] = np.nan
    got = pareto_front(x, y, hx, hy)
    assert sorted(got.tolist()) == sorted(brute_force(x, y, hx, hy))
    assert list(x[got]) == sorted(x[got])


def test_latency_against_throughput():
    step_ms = np.array([1.0, 2.0, 1.5, 3.0, 2.5])
    tokens = np.array([10.0, 30.0, 5.0, 31.0, 29.0])
    assert pareto_front(step_ms, tokens, higher_x=False, higher_y=True).tolist() == [0, 1, 3]
    assert pareto_front(np.array([np.nan]), np.array([1.0])).size == 0
