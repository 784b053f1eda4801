"""A query result pinned as a timeline row (Perfetto's debug tracks): its intervals, sorted.

The row is drawn per frame from what falls in the view: a `searchsorted` on the sorted
starts and on the running maximum of the ends finds the visible slice, and past a few
thousand intervals the row is drawn as per-pixel coverage (a `bincount`), so a result
of millions of rows costs the same to draw as a few.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from explorer.model.query import Intervals, intervals_of


@dataclass
class QueryTrack:
    """Intervals [start, end) in absolute trace ns, sorted by start, with optional labels."""

    name: str
    starts: np.ndarray
    ends: np.ndarray
    labels: list[str] = field(default_factory=list)
    _max_end: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        order = np.argsort(self.starts, kind="stable")
        self.starts = np.asarray(self.starts, np.float64)[order]
        self.ends = np.maximum(np.asarray(self.ends, np.float64)[order], self.starts)
        if self.labels:
            self.labels = [self.labels[i] for i in order]
        self._max_end = np.maximum.accumulate(self.ends) if len(self.ends) else self.ends

    @classmethod
    def from_result(cls, name: str, table: pa.Table, where: Intervals | None = None) -> QueryTrack | None:
        """The track of a query result with start and duration (or end) columns; None without them."""
        where = where or intervals_of(table)
        if where is None:
            return None
        other = table.column(where.duration or where.end)
        keep = table.filter(pc.and_(pc.is_valid(table.column(where.start)), pc.is_valid(other)))
        s, e = where.arrays(keep)
        labels = [str(v) for v in keep.column(where.label).to_pylist()] if where.label and len(s) == keep.num_rows else []
        return cls(name, s, e, labels)

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def span(self) -> tuple[float, float]:
        return (float(self.starts[0]), float(self._max_end[-1])) if len(self) else (0.0, 0.0)

    def visible(self, t0: float, t1: float) -> tuple[int, int]:
        """The slice [lo, hi) of intervals that may overlap [t0, t1)."""
        lo = int(np.searchsorted(self._max_end, t0, side="right"))
        hi = int(np.searchsorted(self.starts, t1, side="left"))
        return lo, max(hi, lo)

    def coverage(self, t0: float, t1: float, pixels: int) -> np.ndarray:
        """Per pixel of [t0, t1) split into `pixels`: is any interval there (bool)."""
        lo, hi = self.visible(t0, t1)
        if hi <= lo or pixels <= 0:
            return np.zeros(max(pixels, 0), dtype=bool)
        scale = pixels / (t1 - t0)
        x0 = np.clip(np.floor((self.starts[lo:hi] - t0) * scale), 0, pixels - 1).astype(np.int64)
        x1 = np.clip(np.ceil((self.ends[lo:hi] - t0) * scale), 1, pixels).astype(np.int64)
        x1 = np.maximum(x1, x0 + 1)
        diff = np.bincount(x0, minlength=pixels + 1)[: pixels + 1] - np.bincount(x1, minlength=pixels + 1)[: pixels + 1]
        return np.cumsum(diff)[:pixels] > 0

    def at(self, t: float, tolerance: float = 0.0) -> int | None:
        """The interval under time `t` (the shortest of those overlapping it, within `tolerance`)."""
        lo, hi = self.visible(t - tolerance, t + tolerance)
        if hi <= lo:
            return None
        s, e = self.starts[lo:hi], self.ends[lo:hi]
        hit = np.flatnonzero((s <= t + tolerance) & (e >= t - tolerance))
        if not len(hit):
            return None
        return lo + int(hit[np.argmin(e[hit] - s[hit])])

    def label(self, i: int) -> str:
        return self.labels[i] if self.labels else ""
