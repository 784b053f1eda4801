"""The vectorised op nesting agrees with the stack loop on properly nested scopes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.interop.kineto.nesting import _nesting_parents_loop, nesting_parents


def _nested(draw, t0: int, t1: int, depth: int, out: list) -> None:
    """Random children inside [t0, t1): disjoint, each with its own random children."""
    if depth > 4 or t1 - t0 < 2:
        return
    cuts = sorted(draw(st.lists(st.integers(t0, t1), min_size=0, max_size=6)))
    for a, b in zip(cuts[0::2], cuts[1::2]):
        if draw(st.booleans()) or b > a:
            out.append((a, b))
            _nested(draw, a, b, depth + 1, out)


@st.composite
def scopes(draw):
    rows = []
    for thread in range(draw(st.integers(1, 3))):
        ivals: list = []
        _nested(draw, 0, 1000, 0, ivals)
        rows += [(thread, a, b) for a, b in ivals]
    rows.sort(key=lambda r: (r[0], r[1], -r[2]))
    return rows


@settings(max_examples=150, deadline=None)
@given(scopes())
def test_vectorised_nesting_matches_the_loop(rows) -> None:
    if not rows:
        return
    th, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows))
    fast = nesting_parents(th, s, e)
    slow = _nesting_parents_loop(th.tolist(), s.tolist(), e.tolist())
    if fast is None:  # only when scopes share both ends (ambiguous order); the loop then decides
        return
    body = e > s
    assert (fast[body] == slow[body]).all()
    # every parent contains its child
    has = fast >= 0
    assert (s[fast[has]] <= s[has]).all() and (e[fast[has]] >= e[has]).all()


def test_improper_nesting_falls_back() -> None:
    th = np.zeros(2, dtype=np.int64)
    s, e = np.array([0, 5]), np.array([10, 15])  # overlapping, not nested
    assert nesting_parents(th, s, e) is None
    assert _nesting_parents_loop([0, 0], [0, 5], [10, 15]).tolist() == [-1, -1]


def test_three_levels_and_siblings() -> None:
    th = np.array([0, 0, 0, 0, 1])
    s = np.array([0, 1, 2, 6, 0])
    e = np.array([10, 5, 3, 9, 4])
    assert nesting_parents(th, s, e).tolist() == [-1, 0, 1, 0, -1]
