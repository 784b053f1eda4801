"""The visible time range every timeline pane, ruler and view shares."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

MIN_WIDTH_NS = 8.0  # deepest zoom: a few ns across the screen (single instructions are ~10s of ns)


class TimeViewport(QObject):
    """[t0, t1) in absolute trace ns (floats), clamped to the trace span plus a margin.

    Views convert to pixels as (t - t0) * px_per_ns, so Qt only ever sees small,
    screen-sized numbers (timestamps are rebased before they reach Qt).
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.lo, self.hi = 0.0, 1.0
        self.t0, self.t1 = 0.0, 1.0

    @property
    def width(self) -> float:
        return self.t1 - self.t0

    def set_limits(self, lo: float, hi: float) -> None:
        self.lo, self.hi = float(lo), float(max(hi, lo + MIN_WIDTH_NS))
        self.fit()

    def fit(self) -> None:
        """Show the whole trace."""
        self.set_range(self.lo, self.hi)

    def set_range(self, t0: float, t1: float) -> None:
        span = self.hi - self.lo
        margin = 0.05 * span
        width = min(max(t1 - t0, MIN_WIDTH_NS), span + 2 * margin)
        mid = (t0 + t1) / 2
        t0 = mid - width / 2
        t0 = min(max(t0, self.lo - margin), self.hi + margin - width)
        t1 = t0 + width
        if (t0, t1) != (self.t0, self.t1):
            self.t0, self.t1 = t0, t1
            self.changed.emit()

    def zoom(self, factor: float, anchor: float | None = None) -> None:
        """Scale the width by `factor` (<1 zooms in) keeping time `anchor` where it is on screen."""
        if anchor is None:
            anchor = (self.t0 + self.t1) / 2
        width = max(self.width * factor, MIN_WIDTH_NS)
        frac = (anchor - self.t0) / self.width if self.width else 0.5
        t0 = anchor - frac * width
        self.set_range(t0, t0 + width)

    def pan(self, dt: float) -> None:
        self.set_range(self.t0 + dt, self.t1 + dt)
