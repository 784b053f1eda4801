"""What an analysis looks at: a time window, some chips, cores and tracks.

`Scope` is the one selection of the project: the CLI's `--range/--chips/--cores/--tracks`
text, the Python API's values and the GUI's area selection all become one, checked once
by `Scope.resolve`, so summary, export, diff and the panels agree on what "the selection" is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from simcore.errors import UserError
from simcore.textlists import int_list
from simcore.trace import Trace

from explorer.model.tracks import Tracks


@dataclass(frozen=True)
class Scope:
    """What an analysis, an export or a view looks at: a window [t0, t1) in trace ns
    (None = open on that side), chips, cores and tracks (None = all of them).

    The one place the selection grammar lives: `Scope.parse` reads the CLI's text
    (`--range 0:200us --chips 0,3 --cores 0,1 --tracks 4,5`), `resolve` checks it
    against a trace and closes the window on the trace's span, and `track_mask` /
    `rows` apply it. Chip-level rows (core -1: DMA rings, collectives, counters)
    follow the chips only, so `--cores` never hides a chip's own activity.
    """

    t0: int | None = None
    t1: int | None = None
    chips: tuple[int, ...] | None = None
    cores: tuple[int, ...] | None = None
    track_ids: tuple[int, ...] | None = None
    whole_window_outside: str = field(default="allowed", compare=False)
    """"refused": a window wholly outside the trace is one sentence (the CLI's --range, where it is a
    mistyped number or unit); "allowed": it selects nothing (an area dragged in the timeline's margin)."""

    @classmethod
    def parse(cls, range: str | None = None, chips: str | None = None, cores: str | None = None,
              tracks: str | None = None) -> Scope:
        """The CLI grammar: `START:END` with ns/us/ms/s (either side open), `0,3` lists."""
        t0, t1 = parse_range(range)
        return cls(t0, t1, parse_ids(chips, "--chips", "chip"), parse_ids(cores, "--cores", "core"),
                   parse_ids(tracks, "--tracks", "track"))

    @classmethod
    def of(cls, chips: Iterable[int] | None = None, time_range: tuple[int, int] | None = None,
           track_ids: Iterable[int] | None = None, cores: Iterable[int] | None = None) -> Scope:
        """The Python API's values (`summarize(trace, chips=[0], time_range=(t0, t1))`)."""
        t0 = t1 = None
        if time_range is not None:
            try:
                t0, t1 = (int(x) for x in time_range)
            except (TypeError, ValueError):
                raise UserError(f"time range {time_range!r} is not a pair of integer nanoseconds.") from None
            if t1 <= t0:
                raise UserError(f"time range {t0}..{t1} ns is empty; the end must be after the start.")
        return cls(t0, t1, _ids(chips), _ids(cores), _ids(track_ids))

    @property
    def duration_ns(self) -> int:
        """The window's length (a resolved scope's; an open side counts as nothing)."""
        return (self.t1 or 0) - (self.t0 or 0)

    @property
    def is_whole(self) -> bool:
        """Every track (the window may still be narrower than the trace)."""
        return self.chips is None and self.cores is None and self.track_ids is None

    def resolve(self, trace: Trace, tracks: Tracks) -> Scope:
        """This scope checked against the trace, its open ends closed on the trace's span;
        chips, cores or tracks the trace lacks raise one-sentence UserErrors."""
        lo, hi = trace.span_ns
        t0 = lo if self.t0 is None else self.t0
        t1 = hi if self.t1 is None else self.t1
        if t1 <= t0 and (self.t0, self.t1) != (None, None):  # an empty trace's span may be empty
            if self.t1 is None:  # the side given is beyond the trace, not an end before a start
                raise UserError(f"time range starts at {t0} ns, after the trace ends (it spans {lo}..{hi} ns).")
            if self.t0 is None:
                raise UserError(f"time range ends at {t1} ns, before the trace starts (it spans {lo}..{hi} ns).")
            raise UserError(f"time range {t0}..{t1} ns is empty; the end must be after the start.")
        if self.whole_window_outside == "refused" and hi > lo and (t1 <= lo or t0 > hi):
            raise UserError(f"time range {t0}..{t1} ns is outside the trace, which spans {lo}..{hi} ns: nothing "
                            "is in it.")
        self.check(tracks)
        return replace(self, t0=int(t0), t1=int(t1))

    def check(self, tracks: Tracks) -> None:
        """One sentence when the scope names a chip, core or track the trace does not have."""
        for ids, have, noun in ((self.chips, tracks.chip, "chip"), (self.cores, tracks.core, "core")):
            if ids is None:
                continue
            known = sorted(set(np.unique(have[(have >= 0) & (tracks.kind != "")]).tolist()))
            bad = [c for c in ids if c not in known]
            if bad:
                raise UserError(f"{noun} {bad[0]} is not in this trace ({noun}s: {_span_text(known)}).")
        if self.track_ids is not None:
            bad = [t for t in self.track_ids if t < 0 or t >= len(tracks) or tracks.kind[t] == ""]
            if bad:
                raise UserError(f"track {bad[0]} is not in this trace (it has tracks 0..{len(tracks) - 1}).")

    def track_mask(self, tracks: Tracks) -> np.ndarray:
        """Boolean mask over track ids: tracks this scope includes."""
        mask = tracks.kind != ""
        if self.chips is not None:
            mask &= np.isin(tracks.chip, self.chips)
        if self.cores is not None:
            mask &= np.isin(tracks.core, self.cores) | (tracks.core < 0)
        if self.track_ids is not None:
            sel = np.zeros(len(tracks), dtype=bool)
            sel[list(self.track_ids)] = True
            mask &= sel
        return mask

    def core_mask(self, tracks: Tracks) -> tuple[np.ndarray, np.ndarray]:
        """(chip, core) pairs whose kernels count: every core of the chips in scope, or
        with track_ids, the cores (and chips, for chip-level tracks) the tracks belong to."""
        m = self.track_mask(tracks)
        return tracks.chip[m], tracks.core[m]

    def rows(self, track_ok: np.ndarray, track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Indices of rows on a selected track (`track_ok`, by track id) that overlap the window;
        a zero-length row at t counts if t0 <= t < t1. Rows on tracks the tracks table lacks are dropped."""
        inside = (track >= 0) & (track < len(track_ok))
        ok = np.zeros(len(track), dtype=bool)
        ok[inside] = track_ok[track[inside]]
        return np.flatnonzero(ok & self.in_window(start, end))

    def in_window(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Mask of rows overlapping [t0, t1) (an open side lets everything through); a
        zero-length row at t counts if t0 <= t < t1."""
        ok = np.ones(len(start), dtype=bool)
        if self.t0 is not None:
            ok &= (end > self.t0) | ((end == start) & (start >= self.t0))
        if self.t1 is not None:
            ok &= start < self.t1
        return ok

    def describe(self) -> dict:
        """The scope as `trnx summary --json` reports it."""
        out = {
            "t0_ns": self.t0,
            "t1_ns": self.t1,
            "chips": None if self.chips is None else list(self.chips),
            "track_ids": None if self.track_ids is None else list(self.track_ids),
        }
        if self.cores is not None:
            out["core_ids"] = list(self.cores)
        return out


# -- the text grammar ------------------------------------------------------------------
_UNITS = {"": 1, "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TIME = re.compile(r"^\s*(-?\d+(?:\.\d*)?|-?\.\d+)\s*(ns|us|ms|s)?\s*$")
RANGE_HELP = "START:END in ns, or with ns/us/ms/s (e.g. 0:200us, 1.2ms:1.5ms; either side may be empty)"


def parse_time(text: str) -> int:
    """'1500', '1.5us', '2ms' -> ns (exact: decimal arithmetic, rounded to the nanosecond)."""
    m = _TIME.match(text)
    if not m:
        raise UserError(f"'{text.strip()}' is not a time (a number of ns, or with ns/us/ms/s, e.g. 1.5ms).")
    return int((Decimal(m.group(1)) * _UNITS[m.group(2) or ""]).to_integral_value(ROUND_HALF_EVEN))


def parse_range(text: str | None) -> tuple[int | None, int | None]:
    """'START:END' (either side may be empty) -> (t0, t1) in ns; None or '' -> (None, None)."""
    if not text:
        return None, None
    a, sep, b = text.partition(":")
    if not sep:
        raise UserError(f"--range '{text}' is not {RANGE_HELP}.")
    try:
        t0 = parse_time(a) if a.strip() else None
        t1 = parse_time(b) if b.strip() else None
    except UserError:
        raise UserError(f"--range '{text}' is not {RANGE_HELP}.") from None
    if t0 is not None and t1 is not None and t1 <= t0:
        raise UserError(f"--range '{text}' ends before it starts; the window is empty.")
    return t0, t1


def parse_ids(text: str | None, flag: str, noun: str) -> tuple[int, ...] | None:
    """'0,3' -> (0, 3), sorted and unique; None or '' -> None (no filter)."""
    if text is None or not str(text).strip():
        return None
    try:
        ids = int_list(text)
    except ValueError:
        ids = [-1]
    if not ids or min(ids) < 0:
        raise UserError(f"{flag} '{text}' is not a comma-separated list of {noun} numbers (e.g. 0,3).")
    return tuple(sorted(set(ids)))


def _ids(values: Iterable[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(sorted({int(v) for v in values}))


def _span_text(known: list[int]) -> str:
    if not known:
        return "none"
    return f"{known[0]}..{known[-1]}" if known == list(range(known[0], known[-1] + 1)) else ",".join(map(str, known[:16]))
