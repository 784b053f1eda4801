"""Find instructions, DMA transfers, kernels and collectives by name, and step through hits.

A query matches, case-insensitively as a substring, the name an event is shown
with (opcode, `DMA hbm->sbuf`, kernel name, collective kind); kernels also match
by their op's and layer's names; `#1234` finds the event with that id. Matching works on
dictionary codes (one comparison per distinct name, then one vectorised pass), and
hits stay per-lane index arrays sorted by time, so stepping is a `searchsorted` per
lane: millions of hits cost no Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.model.timeline.trace_index import EventRef, Lane, TraceIndex


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


def _or(masks: dict[str, np.ndarray], table: str, m: np.ndarray) -> None:
    masks[table] = m if table not in masks else (masks[table] | m)


def _match_masks(index: TraceIndex, needle: str) -> dict[str, np.ndarray]:
    """Per interval table, a boolean per sorted position: does the event match?

    Names are matched once per distinct name, then one pass over each table's opcode (or
    name) codes marks the events. Kernel, op and layer names find kernels (and op/layer
    names the collectives their op issued), not every instruction inside them: stepping
    goes kernel by kernel.
    """
    masks: dict[str, np.ndarray] = {}
    shown = index.colours("opcode")
    match = _name_matches(shown.names, needle)
    if match.any():
        for tname, codes in shown.codes.items():
            _or(masks, tname, codes.matches(match))
    h = index.kernel_ops
    if h is None:
        return masks
    kernel_hit = np.zeros(len(h.kernel_rows), dtype=bool)  # per kernels-table row
    for mode in ("kernel", "op", "layer"):
        names = h.names[mode]
        kernel_hit |= np.array([needle in str(v).lower() for v in names], dtype=bool) if len(names) else kernel_hit
    if kernel_hit.any():  # kernels by their own, their op's or their layer's name
        ev = index.tables["kernels"]
        _or(masks, "kernels", kernel_hit if ev.order is None else kernel_hit[ev.order])
    op_hit = np.array([needle in str(a).lower() or needle in str(b).lower() for a, b in zip(h.op_names, h.op_layer)], dtype=bool)
    ev = index.tables["collectives"]
    if op_hit.any() and ev.n:
        rows = h.op_row(ev.sorted_column("op_id"))
        _or(masks, "collectives", np.where(rows >= 0, op_hit[np.maximum(rows, 0)], False))
    return masks


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
        return SearchHits(q, lanes, hits, [lane.start[h] for lane, h in zip(lanes, hits)])
    return hits_of_masks(q, lanes, _match_masks(index, q.lower()))


def hits_of_masks(query: str, lanes: list[Lane], masks: dict[str, np.ndarray]) -> SearchHits:
    """Each lane's hits from per-table event masks (`masks[table name]`, one flag per row;
    a table without a mask has no hits): what the plain and the field search both return."""
    hits = [np.zeros(0, np.int64)] * len(lanes)
    for i, lane in enumerate(lanes):
        m = masks.get(lane.events.name)
        if m is not None:
            hits[i] = np.flatnonzero(m[lane.lo:lane.hi])
    return SearchHits(query, lanes, hits, [lane.start[h] for lane, h in zip(lanes, hits)])
