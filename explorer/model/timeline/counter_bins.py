"""Counter series binned per pixel with min / max / mean / last (Perfetto's counter mipmap).

A counter value holds from its sample time until the next sample, so a pixel sees
the value held at its left edge plus every sample inside it. Min and max over
those keep every peak visible at any zoom (pyqtgraph's autoDownsample assumes
uniform spacing and drops them); the time-weighted mean is exact through a prefix
integral. A pyramid of block minima/maxima over consecutive samples keeps the cost
per frame proportional to pixels, not samples, when a pixel holds thousands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from explorer.model.timeline.lod import compiled_loops

HAVE_NUMBA = True  # bin with lod_kernels' compiled loops when numba is there (imported on first use)


@dataclass
class CounterBins:
    """Per-bin statistics; NaN where the counter has no value yet (before its first sample)."""

    edges: np.ndarray
    min: np.ndarray
    max: np.ndarray
    mean: np.ndarray
    last: np.ndarray


@dataclass
class CounterSeries:
    """One counter track: sample times (sorted) and values in the track's unit."""

    name: str
    unit: str
    time: np.ndarray
    value: np.ndarray
    _integral: np.ndarray | None = field(default=None, repr=False)
    _levels: list[tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False)
    _peak: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.time = np.ascontiguousarray(self.time, dtype=np.int64)
        self.value = np.ascontiguousarray(self.value, dtype=np.float64)

    @property
    def peak(self) -> float:
        """The largest value (kept: a counter row reads it every frame)."""
        if self._peak is None:
            self._peak = float(self.value.max()) if len(self.value) else 0.0
        return self._peak

    def value_at(self, t: float) -> float | None:
        """The value held at time t (None before the first sample)."""
        i = int(np.searchsorted(self.time, int(np.floor(t)), side="right")) - 1
        return None if i < 0 else float(self.value[i])

    # -- exact integral for time-weighted means ---------------------------------
    def integral_before(self, t: np.ndarray) -> np.ndarray:
        """Integral of the held value over (first sample, t) in value x ns."""
        if self._integral is None:
            widths = np.diff(self.time).astype(np.float64)
            cum = np.zeros(len(self.time), dtype=np.float64)
            np.cumsum(self.value[:-1] * widths, out=cum[1:])
            self._integral = cum
        t = np.asarray(t, dtype=np.float64)
        if len(self.time) == 0:
            return np.zeros(t.shape)
        i = np.searchsorted(self.time, np.floor(t).astype(np.int64), side="right") - 1
        ic = np.maximum(i, 0)
        return np.where(i >= 0, self._integral[ic] + self.value[ic] * (t - self.time[ic]), 0.0)

    def _integral_at(self, t: np.ndarray, held: np.ndarray) -> np.ndarray:
        if self._integral is None:
            self.integral_before(t[:1])
        hc = np.maximum(held, 0)
        return np.where(held >= 0, self._integral[hc] + self.value[hc] * (t - self.time[hc]), 0.0)

    def mean_in(self, t0: float, t1: float) -> float:
        """Time-weighted mean over [t0, t1) (before the first sample counts as 0)."""
        if t1 <= t0:
            return 0.0
        a, b = self.integral_before(np.array([t0, t1]))
        return float((b - a) / (t1 - t0))

    # -- min/max pyramid ----------------------------------------------------------
    def _pyramid(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Level k holds min and max over blocks of 2**k consecutive samples."""
        if self._levels is None:
            # every level carries one trailing copy of its last block so that
            # `reduceat` can take an exclusive end equal to the level's length
            padded = np.r_[self.value, self.value[-1:]]
            levels = [(padded, padded)]
            lo, hi = self.value, self.value
            while len(lo) > 64:
                if len(lo) % 2:
                    lo, hi = np.r_[lo, lo[-1]], np.r_[hi, hi[-1]]
                lo = np.minimum(lo[0::2], lo[1::2])
                hi = np.maximum(hi[0::2], hi[1::2])
                levels.append((np.r_[lo, lo[-1]], np.r_[hi, hi[-1]]))
            self._levels = levels
        return self._levels

    def _level(self, first: int, stop: int, nb: int) -> int:
        """A pyramid level whose blocks stay well under the typical samples per bin."""
        per_bin = max((stop - first) / nb, 1.0)
        level = max(int(np.floor(np.log2(per_bin / 4.0))), 0) if per_bin >= 8 else 0
        return min(level, len(self._pyramid()) - 1)

    def _bins_compiled(self, e: np.ndarray, keys: np.ndarray) -> CounterBins:
        """`bins` by lod_kernels' compiled loops: the same values, a few calls instead of ~30 numpy passes."""
        from explorer.model.timeline.lod_kernels import counter_bin_stats, counter_spans, counts_le

        nb = len(e) - 1
        held = np.empty(nb + 1, dtype=np.int64)
        counts_le(self.time, 0, len(self.time), keys, held)
        held -= 1
        first, stop = np.empty(nb, dtype=np.int64), np.empty(nb, dtype=np.int64)
        counter_spans(self.time, held, e, first, stop)
        level = self._level(int(first[0]), int(stop[-1]), nb)
        lo_arr, hi_arr = self._pyramid()[level]
        if self._integral is None:
            self.integral_before(e[:1])
        vmin, vmax, mean, last = (np.empty(nb) for _ in range(4))
        counter_bin_stats(self.time, self.value, self._integral, lo_arr, hi_arr, level, e, held, first, stop,
                          vmin, vmax, mean, last)
        return CounterBins(e, vmin, vmax, mean, last)

    def bins(self, edges: np.ndarray) -> CounterBins:
        """Min, max, time-weighted mean and last value in each bin between `edges`."""
        e = np.asarray(edges, dtype=np.float64)
        nb = len(e) - 1
        nan = np.full(nb, np.nan)
        if len(self.time) == 0 or nb <= 0:
            return CounterBins(e, nan, nan.copy(), nan.copy(), nan.copy())
        keys = np.floor(e).astype(np.int64)
        if HAVE_NUMBA and nb > 1 and bool((keys[1:] >= keys[:-1]).all()) and compiled_loops():
            return self._bins_compiled(e, keys)
        held = np.searchsorted(self.time, keys, side="right") - 1  # in effect at each edge
        # samples strictly inside (left edge, right edge) plus the one held at the left
        first = np.maximum(held[:-1], 0)
        stop = np.maximum(held[1:] + 1, first + 1)  # exclusive; last sample at or before right edge
        # a sample exactly at the right edge belongs to the next bin
        at_edge = (held[1:] >= 0) & (self.time[np.maximum(held[1:], 0)] == e[1:])
        stop = np.where(at_edge & (stop - 1 > first), stop - 1, stop)
        level = self._level(int(first[0]), int(stop[-1]), nb)
        lo_arr, hi_arr = self._pyramid()[level]
        a = first >> level
        b = np.maximum((stop + (1 << level) - 1) >> level, a + 1)  # widened to whole blocks: never hides a peak
        idx = np.empty(2 * nb, dtype=np.int64)
        n_blocks = len(lo_arr) - 1  # without the padding copy
        idx[0::2] = np.minimum(a, n_blocks - 1)
        idx[1::2] = np.minimum(b, n_blocks)
        vmin = np.minimum.reduceat(lo_arr, idx)[0::2]
        vmax = np.maximum.reduceat(hi_arr, idx)[0::2]
        # reduceat gives a[idx] alone where idx[i] >= idx[i+1]; that is the one-sample case
        last = self.value[np.maximum(stop - 1, 0)]
        integ = self._integral_at(e, held)  # same edges, same held samples: no second search
        mean = np.diff(integ) / np.maximum(np.diff(e), 1e-12)
        none = self.time[0] >= e[1:]  # no sample before the bin's right edge
        for arr in (vmin, vmax, mean, last):
            arr[none] = np.nan
        return CounterBins(e, vmin, vmax, mean, last)
