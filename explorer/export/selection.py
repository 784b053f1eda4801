"""What part of a trace a timeline export covers: chips, cores and a time range.

Both timeline exporters (Chrome JSON, Perfetto) read the same selection, so a
filtered export means the same thing in both. Rows are kept whole: an interval
that overlaps the range is exported with its real start and end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from simcore.errors import UserError
from simcore.trace import Trace

_UNITS = {"": 1, "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TIME = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ns|us|ms|s)?\s*$")


def parse_time(text: str) -> int:
    """'1500', '1.5us', '2ms' -> ns."""
    m = _TIME.match(text)
    if not m:
        raise UserError(f"'{text}' is not a time (use ns, or a number with ns/us/ms/s).")
    return int(round(float(m.group(1)) * _UNITS[m.group(2) or ""]))


def parse_range(text: str | None) -> tuple[int | None, int | None]:
    """'START:END' (either side may be empty) -> (t0, t1) in ns."""
    if not text:
        return None, None
    if ":" not in text:
        raise UserError(f"range '{text}' must look like START:END, e.g. 0:2ms or 1.5ms: .")
    a, b = text.split(":", 1)
    t0 = parse_time(a) if a.strip() else None
    t1 = parse_time(b) if b.strip() else None
    if t0 is not None and t1 is not None and t1 <= t0:
        raise UserError(f"range '{text}' ends before it starts.")
    return t0, t1


def parse_ints(text: str | None, what: str) -> list[int] | None:
    """'0,3' -> [0, 3]; None for no filter."""
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"'{text}' is not a comma-separated list of {what} numbers.") from None


def _np(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


@dataclass
class Selection:
    """Chips, cores and time range to keep; None keeps everything."""

    chips: list[int] | None = None
    cores: list[int] | None = None
    t0: int | None = None
    t1: int | None = None

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Selection:
        rng = options.get("range")
        t0, t1 = rng if isinstance(rng, tuple) else parse_range(rng)
        return cls(options.get("chips"), options.get("cores"), t0, t1)

    def track_mask(self, tracks: pa.Table) -> np.ndarray:
        """Per track_id (dense), whether the track is selected. Chip-level rows (core -1) follow --chips only."""
        n = int(_np(tracks, "track_id").max()) + 1 if tracks.num_rows else 0
        keep = np.ones(tracks.num_rows, dtype=bool)
        if self.chips is not None:
            keep &= np.isin(_np(tracks, "chip"), self.chips)
        if self.cores is not None:
            core = _np(tracks, "core")
            keep &= np.isin(core, self.cores) | (core < 0)
        mask = np.zeros(n, dtype=bool)
        mask[_np(tracks, "track_id")[keep]] = True
        return mask

    def rows(self, track_ok: np.ndarray, track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Indices of rows on a selected track that overlap the range (a zero-length row at t counts if t0 <= t < t1)."""
        inside = (track >= 0) & (track < len(track_ok))  # rows on tracks the tracks table lacks are dropped
        ok = np.zeros(len(track), dtype=bool)
        ok[inside] = track_ok[track[inside]]
        if self.t0 is not None:
            ok &= (end > self.t0) | ((end == start) & (start >= self.t0))
        if self.t1 is not None:
            ok &= start < self.t1
        return np.flatnonzero(ok)


def check_selection(trace: Trace, sel: Selection) -> None:
    """One sentence when a filter names chips or cores the trace does not have."""
    tracks = trace.tracks
    if sel.chips is not None:
        have = set(_np(tracks, "chip").tolist())
        missing = sorted(set(sel.chips) - have)
        if missing:
            raise UserError(f"the trace has no chip {missing[0]} (it has chips {sorted(have)[:16]}).")
    if sel.cores is not None:
        have = set(_np(tracks, "core").tolist()) - {-1}
        missing = sorted(set(sel.cores) - have)
        if missing:
            raise UserError(f"the trace has no core {missing[0]} (it has cores {sorted(have)[:16]}).")
