"""Find instructions, DMA transfers, kernels, ops and collectives by name, and step through hits.

A query matches, case-insensitively as a substring, the name an event is shown
with (opcode, `DMA hbm->sbuf`, kernel name, collective kind) and the kernel, op and
layer it belongs to; `#1234` finds the event with that id. Matching works on
dictionary codes (one comparison per distinct name, then one vectorised pass), and
hits stay per-lane index arrays sorted by time, so stepping is a `searchsorted` per
lane: millions of hits cost no Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.model.trace_index import EventRef, Lane, TraceIndex


@dataclass
class SearchHits:
    query: str
    lanes: list[Lane]
    hits: list[np.ndarray]  # per lane: lane-relative indices, increasing
    starts: list[np.ndarray]  # per lane: start of each hit

    @property
    def count(self) -> int:
        return int(sum(len(h) for h in self.hits))

    def _key(self, i: int) -> int:
        return self.lanes[i].track.track_id

    def step(self, after: tuple[int, int] | None, direction: int = 1) -> tuple[EventRef, int] | None:
        """The next (direction=1) or previous (-1) hit after position `after` = (start_ns, track_id).

        Hits are ordered by (start, track id); stepping wraps around. Returns the hit
        and its 0-based rank in that order.
        """
        if self.count == 0:
            return None
        best: tuple[int, int, int, int] | None = None  # (start, track, lane i, hit j)
        for i, (h, s) in enumerate(zip(self.hits, self.starts)):
            if not len(h):
                continue
            tid = self._key(i)
            if after is None:
                j = 0 if direction > 0 else len(h) - 1
            elif direction > 0:
                j = int(np.searchsorted(s, after[0], side="right" if tid <= after[1] else "left"))
                if j >= len(h):
                    continue
            else:
                j = int(np.searchsorted(s, after[0], side="left" if tid >= after[1] else "right")) - 1
                if j < 0:
                    continue
            cand = (int(s[j]), tid, i, j)
            if best is None or (cand[:2] < best[:2] if direction > 0 else cand[:2] > best[:2]):
                best = cand
        if best is None:  # wrap around
            return self.step(None, direction)
        _, _, i, j = best
        return EventRef(self.lanes[i].events.name, self.lanes[i].events.row(self.lanes[i].lo + int(self.hits[i][j]))), self.rank(best[0], best[1])

    def rank(self, start: int, track_id: int) -> int:
        """How many hits come before (start, track_id)."""
        n = 0
        for i, s in enumerate(self.starts):
            side = "right" if self._key(i) < track_id else "left"
            n += int(np.searchsorted(s, start, side=side))
        return n


def _name_matches(vocab: list[str], needle: str) -> np.ndarray:
    return np.array([needle in v.lower() for v in vocab], dtype=bool)


def search(index: TraceIndex, query: str) -> SearchHits:
    """Every event whose name (or kernel/op/layer) contains `query`, or `#id`."""
    q = query.strip()
    lanes = [ln for _, ln in sorted(index.lanes.items())]
    hits: list[np.ndarray] = [np.zeros(0, np.int64)] * len(lanes)
    if not q:
        return SearchHits(q, lanes, hits, [np.zeros(0, np.int64)] * len(lanes))
    if q.startswith("#") and q[1:].isdigit():
        ref = index.find_id(int(q[1:]))
        if ref is not None:
            lane, k = index.locate(ref)
            i = lanes.index(lane)
            hits[i] = np.array([k], dtype=np.int64)
    else:
        needle = q.lower()
        # per table: a boolean per sorted position, from matching names per mode
        masks: dict[str, np.ndarray] = {}
        for mode in ("opcode", "kernel", "op", "layer"):
            cc = index.colours(mode)
            match = _name_matches(cc.names, needle)
            if not match.any():
                continue
            for tname, codes in cc.codes.items():
                m = match[codes]
                masks[tname] = m if tname not in masks else (masks[tname] | m)
        for i, lane in enumerate(lanes):
            m = masks.get(lane.events.name)
            if m is not None:
                hits[i] = np.flatnonzero(m[lane.lo:lane.hi])
    starts = [lane.start[h] for lane, h in zip(lanes, hits)]
    return SearchHits(q, lanes, hits, starts)
