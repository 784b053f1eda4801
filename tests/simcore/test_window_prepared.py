"""A capture prepares each list of programs once for all the windows that run it (layers repeat
their kernels); the schedules are the same, bit for bit, as preparing them every window."""

from __future__ import annotations

import numpy as np

from simcore.capture.config import resolve
from simcore.capture.options import CaptureConfig
from simcore.lowering.kernels import lower_kernel, shard
from simcore.timing.window import PreparedCache, schedule_window


def _programs():
    res = resolve(CaptureConfig.from_kwargs(dict(workload="llama3.1-8b", phase="prefill", seq=512, layers=1)))
    hw = res.hw
    specs = {s for op in res.workload.ops[:6] for s in shard(op, res.compute_cores) if s is not None}
    programs = sorted((lower_kernel(hw, s) for s in specs), key=len)
    with_dma = [p for p in programs if (p.partitions > 0).any()]
    return hw, with_dma[:2]


def _same(a, b) -> None:
    (ta, sa, ha), (tb, sb, hb) = a, b
    assert len(ta) == len(tb)
    for x, y in zip(ta, tb):
        for f in ("start", "end", "rate"):
            assert np.array_equal(getattr(x, f), getattr(y, f))
    assert all(np.array_equal(u, v) for u, v in zip(sa, sb))
    assert (ha is None) == (hb is None)
    if ha is not None:
        assert ha.t0 == hb.t0 and ha.slice_ns == hb.slice_ns and ha.t1 == hb.t1
        assert np.array_equal(ha.read, hb.read) and np.array_equal(ha.write, hb.write)


def test_windows_scheduled_from_a_kept_preparation_are_the_same_bit_for_bit():
    hw, (p, q) = _programs()
    cache = PreparedCache(hw)
    state = (np.array([-1e300, -1e300]), np.array([-1e300, -1e300]))
    for t0, weights in ((0.0, [3, 5]), (123_456.5, [3, 5]), (9e6, [7, 1])):  # the later windows hit the cache
        fresh = schedule_window(hw, [p, q], weights, t0, state)
        kept = schedule_window(hw, [p, q], weights, t0, state, cache)
        _same(fresh, kept)
        state = kept[1]
    assert len(cache._items) == 1
    _same(schedule_window(hw, [q], [8], 5.0), schedule_window(hw, [q], [8], 5.0, None, cache))
    assert len(cache._items) == 2


def test_the_cache_keeps_the_most_recently_used_within_its_bytes():
    hw, (p, q) = _programs()
    cache = PreparedCache(hw, max_bytes=1)  # room for one preparation at a time, whatever its size
    a = cache.get([p])
    assert cache.get([p]) is a
    cache.get([q])
    assert list(cache._items) == [(id(q),)] and cache.get([p]) is not a
