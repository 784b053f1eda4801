"""A frame's per-pixel loops, compiled: coverage from the prefix sums, and the colour blend.

`lod.fractions_many` and the lanes' colouring did this as a dozen numpy passes over (rows x
pixels) arrays plus one `searchsorted` per row over the whole lane: at 100M events, ~35% of a
zoom step's GUI-thread time. Here each row is one pass: the pixel edges are searched by
galloping from the previous edge's answer (edges are sorted, so each search starts where the
last ended and touches memory next to it), and each pixel's busy fraction is computed as the
numpy formula computes it, operation for operation in the same float types, so the pictures
are identical bit for bit (tests/model/test_lod_kernels.py compares them with the numpy path).

At the widest zooms each pixel edge lies thousands of intervals past the last, and galloping
there is a chain of cache and TLB misses over a lane's whole column (~40 MB of starts for a
5M-interval lane). A lane's `sample` (every 64th start, `sample_starts`: 12 MB for 100M events,
small enough to stay in cache) then finds each edge's block of 64 first, and the edges are
searched in their blocks independently of each other, without branches, so the processor
overlaps their misses (`counts_sampled`); the answers are the same counts.

Functions compile once per machine (`cache=True`). A window loads them on a thread of their own
while its first trace loads (`lod.load_compiled_loops_apart`: importing numba and loading them
takes ~0.4-0.6 s); frames drawn before they are ready take the numpy path, which draws the same.
Without numba (`HAVE_NUMBA` false) the callers keep their numpy paths.
"""

from __future__ import annotations

import numpy as np

from simcore.jit import HAVE_NUMBA, njit


@njit(cache=True, nogil=True)
def counts_le(a: np.ndarray, lo: int, hi: int, keys: np.ndarray, out: np.ndarray) -> None:
    """out[k] = how many of a[lo:hi] (sorted) are <= keys[k], for non-decreasing keys:
    `np.searchsorted(a[lo:hi], keys, side="right")`."""
    n = hi - lo
    c = 0
    for k in range(len(keys)):
        key = keys[k]
        if c < n and a[lo + c] <= key:
            known = c  # a[lo + known] <= key: the answer is past it
            step = 1
            while known + step < n and a[lo + known + step] <= key:
                known += step
                step *= 2
            left, right = known + 1, min(known + step, n)  # the first element > key is in [left, right]
            while left < right:
                m = (left + right) >> 1
                if a[lo + m] <= key:
                    left = m + 1
                else:
                    right = m
            c = left
        out[k] = c


SAMPLE_SHIFT = 6  # a sample keeps every 64th start: 1/64 of the column, a block of 64 per entry


@njit(cache=True, nogil=True)
def sample_starts(a: np.ndarray, lo: int, hi: int, out: np.ndarray) -> None:
    """out[k] = a[lo + 64 k]: the sample `counts_sampled` searches first (len (hi - lo + 63) // 64)."""
    for k in range(len(out)):
        out[k] = a[lo + (k << SAMPLE_SHIFT)]


@njit(cache=True, nogil=True)
def counts_sampled(a: np.ndarray, lo: int, hi: int, sample: np.ndarray, keys: np.ndarray, out: np.ndarray) -> None:
    """`counts_le` through `sample` (every 64th of a[lo:hi], `sample_starts`; empty: none yet).

    First each key's block: the last sample entry <= key, galloping forward from the previous
    key's (keys are non-decreasing; the sample is small and stays in cache). When the keys span
    few blocks (a deep zoom: neighbouring edges, few intervals apart) galloping through the
    column itself touches less, so that is done instead. Otherwise each key is searched in its
    block of 64 in six steps without branches, the keys independent of one another, so their
    cache misses overlap instead of following one another."""
    n, m, nk = hi - lo, len(sample), len(keys)
    if m == 0 or nk == 0:
        counts_le(a, lo, hi, keys, out)
        return
    b = -1
    for k in range(nk):
        key = keys[k]
        if b + 1 < m and sample[b + 1] <= key:
            known = b + 1  # sample[known] <= key: the block is at or past it
            step = 1
            while known + step < m and sample[known + step] <= key:
                known += step
                step *= 2
            left, right = known + 1, min(known + step, m)  # the first entry > key is in [left, right]
            while left < right:
                mid = (left + right) >> 1
                if sample[mid] <= key:
                    left = mid + 1
                else:
                    right = mid
            b = left - 1
        out[k] = b
    if (out[nk - 1] - out[0]) * 4 < nk:  # fewer than 16 intervals per key: gallop in the column
        counts_le(a, lo, hi, keys, out)
        return
    top = n - 1
    for k in range(nk):
        b = out[k]
        if b < 0:  # before the first start
            out[k] = 0
            continue
        key = keys[k]
        pos = b << SAMPLE_SHIFT  # a[lo + pos] <= key < a[lo + pos + 64] (when there is one)
        step = 1 << (SAMPLE_SHIFT - 1)
        while step > 0:
            i = pos + step
            v = a[lo + min(i, top)]
            pos = i if (i <= top) & (v <= key) else pos  # & not `and`: no branch
            step >>= 1
        out[k] = pos + 1


@njit(cache=True, nogil=True, error_model="numpy")
def coverage_row(start: np.ndarray, dur: np.ndarray, cum: np.ndarray, lo: int, hi: int, sample: np.ndarray,
                 e: np.ndarray, keys: np.ndarray, count: np.ndarray, frac: np.ndarray, last: np.ndarray) -> None:
    """One row of `fractions_many`: busy fraction of each bin between edges `e` (float ns; `keys`
    their floors) over the disjoint intervals [lo, hi) of root arrays start, dur and their prefix
    sum cum, and the (row-relative) last interval starting at or before each bin's right edge.
    `sample`: every 64th of start[lo:hi] (`sample_starts`), or empty."""
    counts_sampled(start, lo, hi, sample, keys, count)
    base = cum[lo]
    prev = 0.0
    for k in range(len(e)):
        j = count[k] - 1
        if j >= 0:
            i = lo + j
            part = e[k] - np.float64(start[i])  # np.clip(e - start, 0.0, dur)
            if part < 0.0:
                part = 0.0
            d = np.float64(dur[i])
            if part > d:
                part = d
            b = np.float64(cum[i] - base) + part
        else:
            b = 0.0
        if k > 0:
            f = (b - prev) / (e[k] - e[k - 1])
            if f != f:  # nan_to_num, then clip to [0, 1]
                f = 0.0
            elif f > 1.0:
                f = 1.0
            elif f < 0.0:
                f = 0.0
            frac[k - 1] = f
            last[k - 1] = j
        prev = b


@njit(cache=True, nogil=True)
def blend_rgb32(pal: np.ndarray, code: np.ndarray, frac: np.ndarray, bg: np.ndarray, out: np.ndarray) -> None:
    """out = `palette.pack_rgb32(bg + (pal[code] - bg) * frac.astype(float32))`, in float32 as numpy
    computes it: each pixel's category colour over the background by its busy fraction."""
    n = pal.shape[0]
    zero, top = np.float32(0.0), np.float32(255.0)
    for r in range(code.shape[0]):
        for k in range(code.shape[1]):
            c = code[r, k]
            if c < 0:
                c += n
            f = np.float32(frac[r, k])
            px = np.uint32(0xFF000000)
            for ch in range(3):
                v = bg[ch] + (pal[c, ch] - bg[ch]) * f
                if v < zero:
                    v = zero
                elif v > top:
                    v = top
                px |= np.uint32(v) << np.uint32(8 * (2 - ch))
            out[r, k] = px


@njit(cache=True, nogil=True)
def _nan_to_num(v: float, nan: float) -> float:
    if v != v:
        return nan
    if v > 1.7976931348623157e308:
        return 1.7976931348623157e308
    if v < -1.7976931348623157e308:
        return -1.7976931348623157e308
    return v


@njit(cache=True, nogil=True)
def counter_lines(vmin: np.ndarray, vmax: np.ndarray, vmean: np.ndarray, scale: float, base: float, x0: float,
                  envelope: np.ndarray, mean: np.ndarray) -> tuple[int, int]:
    """A counter row's vertical lines, one per pixel with a value: the min..max envelope, then the
    mean down to the baseline, as (x1, y1, x2, y2) rows of `envelope` and `mean` (how many of each
    are returned). The numpy formulas of the counter rows, in the same float64 operations."""
    n_env = n_mean = 0
    for k in range(len(vmax)):
        x = x0 + np.float64(k) + 0.5
        top = _nan_to_num(vmax[k] * scale, -1.0)
        if top >= 0:
            bottom = _nan_to_num(vmin[k] * scale, 0.0)
            envelope[n_env, 0] = x
            envelope[n_env, 1] = base - min(bottom, top)
            envelope[n_env, 2] = x
            envelope[n_env, 3] = base - max(top, 0.5)
            n_env += 1
        top = _nan_to_num(vmean[k] * scale, -1.0)
        if top >= 0:
            mean[n_mean, 0] = x
            mean[n_mean, 1] = base - min(0.0, top)
            mean[n_mean, 2] = x
            mean[n_mean, 3] = base - max(top, 0.5)
            n_mean += 1
    return n_env, n_mean


@njit(cache=True, nogil=True)
def _line_rows(y1: float, y2: float) -> tuple[int, int]:
    """The pixel rows [first, stop) Qt's raster engine lights for a one-pixel vertical line from
    y1 to y2 (its cosmetic stroker, square caps): the ends truncated to 26.6 fixed point, rows from
    the upper end's to the lower end's inclusive; a line whose ends are equal as QPointF compares
    them (qFuzzyCompare: within 1e-12 of the smaller, or of 1 where one is 0) is a point at y1's
    row; one shorter than 1/64 px after truncation lights none."""
    if (abs(y1 - y2) <= 1e-12) if (y1 == 0.0 or y2 == 0.0) else (abs(y1 - y2) * 1e12 <= min(abs(y1), abs(y2))):
        r = np.int64(np.floor(y1))
        return r, r + 1
    a = np.int64(min(y1, y2) * 64.0)  # (C's cast truncates toward zero, as int64() does here)
    b = np.int64(max(y1, y2) * 64.0)
    if a == b:
        return np.int64(0), np.int64(0)
    return a >> 6, (b + 64) >> 6


@njit(cache=True, nogil=True)
def counter_pixel_rows(vmin: np.ndarray, vmax: np.ndarray, vmean: np.ndarray, scale: float, base: float,
                       rows: np.ndarray) -> None:
    """Per pixel column k, the rows `counter_lines`' two lines light: rows[k, 0:2] the min..max
    envelope's [first, stop), rows[k, 2:4] the mean's (empty where a line is not drawn); the
    same float64 line ends, rasterised as `_line_rows` says Qt does."""
    for k in range(len(vmax)):
        rows[k, 0] = rows[k, 1] = rows[k, 2] = rows[k, 3] = 0
        top = _nan_to_num(vmax[k] * scale, -1.0)
        if top >= 0:
            bottom = _nan_to_num(vmin[k] * scale, 0.0)
            rows[k, 0], rows[k, 1] = _line_rows(base - min(bottom, top), base - max(top, 0.5))
        top = _nan_to_num(vmean[k] * scale, -1.0)
        if top >= 0:
            rows[k, 2], rows[k, 3] = _line_rows(base - min(0.0, top), base - max(top, 0.5))


@njit(cache=True, nogil=True)
def fill_rows(rows: np.ndarray, col: int, y0: int, colour: np.uint32, out: np.ndarray) -> None:
    """out[y - y0, k] = colour for each row y in [rows[k, col], rows[k, col + 1]) inside `out`
    (every other pixel left as it is: transparent where `out` was zeroed)."""
    h = out.shape[0]
    for k in range(rows.shape[0]):
        a = rows[k, col] - y0
        b = rows[k, col + 1] - y0
        if a < 0:
            a = 0
        if b > h:
            b = h
        for y in range(a, b):
            out[y, k] = colour


@njit(cache=True, nogil=True)
def counter_spans(time: np.ndarray, held: np.ndarray, e: np.ndarray, first: np.ndarray, stop: np.ndarray) -> None:
    """Each bin's samples [first, stop) of `CounterSeries.bins`: the one held at its left edge and
    those inside it, a sample exactly at its right edge belonging to the next bin."""
    for i in range(len(e) - 1):
        f = held[i] if held[i] > 0 else 0
        s = held[i + 1] + 1
        if s < f + 1:
            s = f + 1
        h = held[i + 1]
        if h >= 0 and np.float64(time[h]) == e[i + 1] and s - 1 > f:
            s -= 1
        first[i] = f
        stop[i] = s


@njit(cache=True, nogil=True)
def counter_bin_stats(time: np.ndarray, value: np.ndarray, integral: np.ndarray, lo_arr: np.ndarray,
                      hi_arr: np.ndarray, level: int, e: np.ndarray, held: np.ndarray, first: np.ndarray,
                      stop: np.ndarray, vmin: np.ndarray, vmax: np.ndarray, mean: np.ndarray, last: np.ndarray) -> None:
    """`CounterSeries.bins` after its search (held sample at each edge, each bin's samples
    [first, stop)) and its choice of pyramid level: min and max over the level's blocks, the
    time-weighted mean through the prefix integral, the last value; NaN where no sample has
    started. The numpy formulas (reduceat over block pairs, NaN propagating) in one pass."""
    nb = len(e) - 1
    n_blocks = len(lo_arr) - 1  # without the padding copy
    nan = np.nan
    prev = 0.0
    for k in range(nb + 1):
        h = held[k]
        hc = h if h > 0 else 0
        integ = integral[hc] + value[hc] * (e[k] - np.float64(time[hc])) if h >= 0 else 0.0
        if k > 0:
            i = k - 1
            if np.float64(time[0]) >= e[k]:  # no sample before the bin's right edge
                vmin[i] = vmax[i] = mean[i] = last[i] = nan
            else:
                a = first[i] >> level
                b = (stop[i] + (1 << level) - 1) >> level
                if b < a + 1:
                    b = a + 1
                a = min(a, n_blocks - 1)
                b = min(b, n_blocks)
                lo_v, hi_v = lo_arr[a], hi_arr[a]
                for j in range(a + 1, b):  # np.minimum / np.maximum: NaN wins
                    v = lo_arr[j]
                    if lo_v == lo_v and (v != v or v < lo_v):
                        lo_v = v
                    v = hi_arr[j]
                    if hi_v == hi_v and (v != v or v > hi_v):
                        hi_v = v
                vmin[i], vmax[i] = lo_v, hi_v
                mean[i] = (integ - prev) / max(e[k] - e[k - 1], 1e-12)
                s = stop[i] - 1
                last[i] = value[s if s > 0 else 0]
        prev = integ


def warm() -> None:
    """Load (or compile, once per machine) every loop for the array types a window passes them
    (read-only mappings of a trace and writable arrays), so no frame waits for it."""
    if not HAVE_NUMBA:
        return
    for writable in (True, False):
        i64 = np.array([0, 10, 20], dtype=np.int64)
        f64 = np.array([0.0, 1.0, 2.0])
        for a in (i64, f64):
            a.setflags(write=writable)
        e, keys = np.array([0.0, 5.0, 15.0]), np.array([0, 5, 15], dtype=np.int64)
        count, frac, last = np.empty(3, np.int64), np.empty(2), np.empty(2, np.int64)
        counts_le(i64, 0, 3, keys, count)
        sample = np.zeros(1, np.int64)
        sample_starts(i64, 0, 3, sample)
        for cum_writable in (True, False):  # a prefix sum built now, or mapped from the saved index
            cum = np.array([0, 0, 10, 20], dtype=np.int64)
            cum.setflags(write=cum_writable)
            for s in (sample, sample[:0]):
                coverage_row(i64, i64, cum, 0, 3, s, e, keys, count, frac, last)
        held = np.array([0, 0, 1], dtype=np.int64)
        first, stop = np.empty(2, np.int64), np.empty(2, np.int64)
        counter_spans(i64, held, e, first, stop)
        outs = [np.empty(2) for _ in range(4)]
        counter_bin_stats(i64, f64, np.zeros(3), f64, f64, 0, e, held, first, stop, *outs)
    blend_rgb32(np.zeros((1, 3), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 1)),
                np.zeros(3, np.float32), np.empty((1, 1), dtype=np.uint32))
    one, lines = np.zeros(1), np.empty((1, 4))
    counter_lines(one, one, one, 1.0, 1.0, 0.0, lines, lines)
    rows = np.empty((1, 4), np.int64)
    counter_pixel_rows(one, one, one, 1.0, 1.0, rows)
    fill_rows(rows, 0, 0, np.uint32(0), np.zeros((1, 1), np.uint32))
