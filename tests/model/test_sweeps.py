"""The compiled sweeps give numpy's answers exactly, and the summary does not depend on which runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.model.analysis import engine_time
from explorer.model.intervals import sorted_runs, union_length
from explorer.model.analysis.summary import summarize
from explorer.model.analysis.sweeps import merged_union_length, outside_runs
from simcore.trace import open_trace

intervals = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300)), max_size=40)


def _sorted_part(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    s = np.array(sorted(p[0] for p in pairs), dtype=np.int64)
    d = np.array([p[1] for p in pairs], dtype=np.int64)
    return s, s + d


@settings(max_examples=100, deadline=None)
@given(st.lists(intervals, min_size=1, max_size=6))
def test_merged_union_length_is_the_union_of_every_part(parts):
    ps = [_sorted_part(p) for p in parts]
    s = np.concatenate([p[0] for p in ps])
    e = np.concatenate([p[1] for p in ps])
    bounds = np.cumsum([0] + [len(p[0]) for p in ps], dtype=np.int64)
    assert merged_union_length(s, e, bounds) == union_length(s, e)


def test_an_unsorted_part_is_reported_not_measured():
    s, e = np.array([5, 1], np.int64), np.array([6, 2], np.int64)
    assert merged_union_length(s, e, np.array([0, 2], np.int64)) == -1


@settings(max_examples=100, deadline=None)
@given(intervals, intervals, st.booleans())
def test_outside_runs_matches_the_binary_search(pairs, run_pairs, shuffle):
    s, e = _sorted_part(pairs)
    if shuffle:  # unsorted starts still get the right answer
        order = np.random.default_rng(len(pairs)).permutation(len(s))
        s, e = s[order], e[order]
    rs, re = sorted_runs(*_sorted_part(run_pairs))  # disjoint runs, as a core's kernel runs are
    idx = np.searchsorted(rs, s, side="right") - 1
    expected = ((idx < 0) | (re[np.maximum(idx, 0)] < e)) & (e > s) if len(rs) else e > s
    assert outside_runs(s, e, rs, re).tolist() == expected.tolist()


SAMPLES = sorted((Path(__file__).parents[2] / "sample_traces").glob("*.trnx"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_summary_is_the_same_with_and_without_the_sweeps(path, monkeypatch):
    trace = open_trace(path)
    monkeypatch.setattr(engine_time, "SWEEP_MIN_ROWS", 0)  # every union and kernel-run test swept
    swept = summarize(trace).to_dict()
    monkeypatch.setattr(engine_time, "SWEEP_MIN_ROWS", 10**12)  # numpy only
    assert summarize(trace).to_dict() == swept
