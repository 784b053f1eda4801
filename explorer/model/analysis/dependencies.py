"""Why an event started when it did: its flows, the chain that made it wait, a kernel's critical path.

An event (instruction or DMA transfer) can start only when its engine or queue has
finished the previous event on the same track (in-order execution) and every event
it depends on through `flows` (semaphores, data) has finished. The *binding*
constraint is whichever of those finished last. Following binding constraints
backwards gives the wait chain; doing it from a kernel's last-finishing event,
staying inside the kernel, gives the kernel's critical path.

Every table here carries `id`, `node` ("instruction:ID" / "dma:ID"), `track_id`,
`start_ns`, `end_ns` and `kernel_id`, so a view can jump to or highlight each step.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from explorer.model.events import DMA, INSTRUCTION, TABLE_NAMES, EventIndex
from explorer.model.columns import num
from explorer.model.tracks import Tracks
from explorer.model.flow_index import FlowIndex
from explorer.model.table_chunks import ChunkedColumn, TrackRuns, whole_column
from simcore.errors import UserError
from simcore.trace import Trace

ENGINE_ORDER = "engine_order"  # the edge kind for "the previous event on the same track"
STEP_COLUMNS = ("step", "id", "node", "name", "track_id", "track", "start_ns", "end_ns", "dur_ns", "kernel_id",
                "edge", "slack_ns")
EDGE_COLUMNS = ("id", "node", "name", "track_id", "track", "start_ns", "end_ns", "kernel_id", "kind", "slack_ns")


@dataclass
class CriticalPath:
    """The binding chain inside one kernel, first event first."""

    kernel_id: int
    steps: pd.DataFrame  # STEP_COLUMNS
    time_by_track: pd.DataFrame  # track_id, track, busy_ns, percent of the kernel
    start_ns: int
    end_ns: int

    @property
    def busy_ns(self) -> int:
        return int(self.steps["dur_ns"].sum()) if len(self.steps) else 0

    @property
    def slack_ns(self) -> int:
        """Time on the path not covered by its events (latency, semaphore delays)."""
        return int(self.steps["slack_ns"].clip(lower=0).sum()) if len(self.steps) else 0

    def to_dict(self) -> dict[str, Any]:
        return {"kernel_id": self.kernel_id, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "busy_ns": self.busy_ns, "slack_ns": self.slack_ns,
                "steps": self.steps.to_dict("records"), "time_by_track": self.time_by_track.to_dict("records")}


@dataclass
class WaitChain:
    """A wait chain listed newest first (`Dependencies.wait_chain_back`)."""

    event_id: int
    steps: pd.DataFrame  # STEP_COLUMNS; row 0 is the event itself
    more: bool  # the chain continues past the last row
    causes: int
    max_steps: int

    @property
    def waited_ns(self) -> int:
        """How long the listed steps before the event kept it waiting: from the oldest listed
        step's start to the event's start."""
        if len(self.steps) < 2:
            return 0
        return int(self.steps["start_ns"].iloc[0] - self.steps["start_ns"].iloc[-1])

    @property
    def cause_hops(self) -> int:
        """Hops in the listed chain that are not plain engine order."""
        e = self.steps["edge"]
        return int(((e != "") & (e != ENGINE_ORDER)).sum())


def _column(table, name: str) -> np.ndarray | ChunkedColumn:
    """A column to index by row: the chunk's own numpy view when there is one chunk, else the
    chunks behind a `ChunkedColumn` (no concatenated copy either way)."""
    col = table.column(name)
    if col.num_chunks == 1:
        return col.chunk(0).to_numpy(zero_copy_only=False)
    return ChunkedColumn(table, name)


class _End:
    """start + dur at any rows, computed on access (no whole `end` column)."""

    def __init__(self, start: np.ndarray | ChunkedColumn, dur: np.ndarray | ChunkedColumn) -> None:
        self.start, self.dur = start, dur

    def __getitem__(self, rows):
        return self.start[rows] + self.dur[rows]


class _Table:
    """Columns of `instructions` or `dma` (read in place, a row or a few at a time) plus each
    row's position in (track, start) order."""

    def __init__(self, trace: Trace, code: int) -> None:
        t = trace.table(TABLE_NAMES[code])
        self.table = t
        self.code = code
        # the memory-mapped chunks themselves: a walk reads a few rows, never whole columns
        self.id = _column(t, "id")
        self.track = _column(t, "track_id")
        self.start = _column(t, "start_ns")
        self._dur = _column(t, "dur_ns")
        self.kernel = _column(t, "kernel_id")
        self.end = _End(self.start, self._dur)
        self._names = (ChunkedColumn(t, "opcode"),) if code == INSTRUCTION else (
            ChunkedColumn(t, "src"), ChunkedColumn(t, "dst"))
        # rows grouped by track with starts sorted (what writers produce): the previous event on a
        # track is the previous row, and no order index is needed
        self.runs = TrackRuns.of(t)
        self.key_sorted = self.runs.grouped and self.runs.starts_sorted(t)

    @cached_property
    def order(self) -> np.ndarray:
        n = len(self.id)
        if self.key_sorted:
            return np.arange(n)
        start, track = whole_column(self.table, "start_ns"), whole_column(self.table, "track_id")
        return np.lexsort((np.arange(n), start, track))

    @cached_property
    def pos(self) -> np.ndarray:
        pos = np.empty(len(self.id), np.int64)
        pos[self.order] = np.arange(len(self.id))
        return pos

    def name(self, row: int) -> str:
        if self.code == INSTRUCTION:
            return str(self._names[0].value(row))
        src, dst = self._names
        return f"DMA {src.value(row)}->{dst.value(row)}"

    def rows_of_kernel(self, kernel_id: int) -> np.ndarray:
        """Rows of one kernel (Arrow compute over the chunks, no numpy copy of the column)."""
        if not self.table.num_rows:
            return np.zeros(0, np.int64)
        return pc.indices_nonzero(pc.equal(self.table.column("kernel_id"), kernel_id)).to_numpy().astype(np.int64)

    def previous_rows(self, rows: np.ndarray) -> np.ndarray:
        """`previous` for many rows at once."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.key_sorted:
            prev = np.maximum(rows - 1, 0)
            return np.where((rows > 0) & (self.track[prev] == self.track[rows]), prev, -1)
        p = self.pos[rows]
        prev = self.order[np.maximum(p - 1, 0)]
        return np.where((p > 0) & (self.track[prev] == self.track[rows]), prev, -1)

    def previous(self, row: int) -> int:
        """The row before `row` on the same track, -1 if it is the track's first."""
        if self.key_sorted:
            return row - 1 if row > 0 and self.track[row - 1] == self.track[row] else -1
        p = self.pos[row]
        if p == 0:
            return -1
        prev = int(self.order[p - 1])
        return prev if self.track[prev] == self.track[row] else -1


class Dependencies:
    """Flows indexed both ways, and the binding-constraint walks over them."""

    def __init__(self, trace: Trace, events: EventIndex | None = None, tracks: Tracks | None = None) -> None:
        self.trace = trace
        self.events = events or EventIndex(trace)
        self.tracks = tracks or Tracks.of(trace)
        # flows into an event: searched in place (writers store flows by destination); flows out of
        # one: a sorted copy of src_id, built the first time a view asks for successors
        self._incoming = FlowIndex(trace.flows, "dst_id")
        self._outgoing = FlowIndex(trace.flows, "src_id")

    @cached_property
    def _tables(self) -> dict[int, _Table]:
        return {INSTRUCTION: _Table(self.trace, INSTRUCTION), DMA: _Table(self.trace, DMA)}

    def _locate(self, event_id: int) -> tuple[int, int]:
        table, row = self.events.locate(np.array([event_id]))
        if table[0] < 0:
            raise UserError(f"event {event_id} is not an instruction or DMA transfer of this trace.")
        return int(table[0]), int(row[0])

    def _edges(self, event_id: int, incoming: bool) -> tuple[np.ndarray, np.ndarray]:
        return (self._incoming if incoming else self._outgoing).edges(event_id)

    def _describe(self, ids: np.ndarray, kinds: np.ndarray, ref_start: int | None, incoming: bool) -> pd.DataFrame:
        table, row = self.events.locate(ids)
        recs = []
        for eid, k, tcode, r in zip(ids.tolist(), kinds.tolist(), table.tolist(), row.tolist()):
            if tcode < 0:  # an edge to an event this trace does not hold (e.g. another core's)
                recs.append((eid, "", "(not in trace)", -1, "", -1, -1, -1, k, np.nan))
                continue
            t = self._tables[tcode]
            s, e = int(t.start[r]), int(t.end[r])
            slack = (ref_start - e) if incoming else (s - ref_start) if ref_start is not None else np.nan
            tid = int(t.track[r])
            recs.append((eid, f"{'instruction' if tcode == INSTRUCTION else 'dma'}:{eid}", t.name(r), tid,
                         self._track_label(tid), s, e, int(t.kernel[r]), k, slack))
        return pd.DataFrame.from_records(recs, columns=list(EDGE_COLUMNS))

    def _track_label(self, tid: int) -> str:
        if tid < 0 or tid >= len(self.tracks):
            return ""
        return f"{self.tracks.name[tid]} (chip {self.tracks.chip[tid]} core {self.tracks.core[tid]})"

    def predecessors(self, event_id: int) -> pd.DataFrame:
        """Events `event_id` waited for (flows into it); slack_ns = its start - their end."""
        tcode, row = self._locate(event_id)
        src, kind = self._edges(event_id, incoming=True)
        return self._describe(src, kind, int(self._tables[tcode].start[row]), incoming=True)

    def successors(self, event_id: int) -> pd.DataFrame:
        """Events that waited for `event_id` (flows out of it); slack_ns = their start - its end."""
        tcode, row = self._locate(event_id)
        dst, kind = self._edges(event_id, incoming=False)
        return self._describe(dst, kind, int(self._tables[tcode].end[row]), incoming=False)

    def _binding(self, tcode: int, row: int, kernel_id: int | None) -> tuple[int, int, str] | None:
        """The constraint that finished last among flow predecessors and the previous event on the track."""
        t = self._tables[tcode]
        best: tuple[int, int, str] | None = None
        best_end = None
        prev = t.previous(row)
        if prev >= 0 and (kernel_id is None or t.kernel[prev] == kernel_id):
            best, best_end = (tcode, prev, ENGINE_ORDER), int(t.end[prev])
        src, kind = self._edges(int(t.id[row]), incoming=True)
        if len(src):
            ptab, prow = self.events.locate(src)
            for pc, pr, k in zip(ptab.tolist(), prow.tolist(), kind.tolist()):
                if pc < 0:
                    continue
                pt = self._tables[pc]
                if kernel_id is not None and pt.kernel[pr] != kernel_id:
                    continue
                end = int(pt.end[pr])
                if best_end is None or end > best_end:
                    best, best_end = (pc, pr, str(k)), end
        return best

    def _walk(self, tcode: int, row: int, kernel_id: int | None, max_steps: int,
              causes: int | None = None) -> pd.DataFrame:
        """Binding constraints back from (tcode, row), oldest first; with `causes`, stop once the
        step reached through that many hops that are not engine order is listed. `self._more`
        says whether the walk stopped with a step still before it."""
        steps = []
        edge = ""
        seen = set()
        reached = 0
        self._more = True  # until the walk finds the chain's start
        for _ in range(max_steps):
            if (tcode, row) in seen:  # a cycle in flows: stop rather than loop
                break
            seen.add((tcode, row))
            t = self._tables[tcode]
            nxt = self._binding(tcode, row, kernel_id)
            slack = np.nan
            if nxt is not None:
                slack = int(t.start[row]) - int(self._tables[nxt[0]].end[nxt[1]])
            eid = int(t.id[row])
            tid = int(t.track[row])
            steps.append((eid, f"{'instruction' if tcode == INSTRUCTION else 'dma'}:{eid}", t.name(row), tid,
                          self._track_label(tid), int(t.start[row]), int(t.end[row]),
                          int(t.end[row] - t.start[row]), int(t.kernel[row]), edge, slack))
            if nxt is None:
                self._more = False
                break
            if causes is not None and reached >= causes:
                break
            if nxt[2] != ENGINE_ORDER:
                reached += 1
            tcode, row, edge = nxt
        steps.reverse()
        # each row's `edge` says how the *next* step depended on it; slack is the row's own wait
        frame = pd.DataFrame.from_records(steps, columns=[c for c in STEP_COLUMNS if c != "step"])
        frame.insert(0, "step", np.arange(len(frame)))
        return frame

    def wait_chain(self, event_id: int, max_steps: int = 10_000) -> pd.DataFrame:
        """From the earliest cause to `event_id`: each step's binding constraint, oldest first.

        `edge` names how the next step waited on this one (`semaphore`, `data`,
        `engine_order`); `slack_ns` is the gap between this step's start and the end
        of what it waited for (latency beyond the dependency itself).
        """
        tcode, row = self._locate(event_id)
        return self._walk(tcode, row, None, max_steps)

    def wait_chain_back(self, event_id: int, causes: int = 1, max_steps: int = 200) -> WaitChain:
        """The wait chain newest first: `event_id`, what it waited for, what that waited for...,
        stopping once `causes` hops that are not plain engine order (a semaphore or data wait on
        another engine or queue) have been followed, or after `max_steps` steps. Each row's
        `edge` is how that step waited on the row below it ("" for the last listed); `more`
        says whether the chain goes on (ask again with more causes or steps: "show more")."""
        tcode, row = self._locate(event_id)
        frame = self._walk(tcode, row, None, max_steps, causes)
        more = self._more
        frame = frame.iloc[::-1].reset_index(drop=True)
        frame["edge"] = [*frame["edge"].tolist()[1:], ""] if len(frame) else frame["edge"]
        frame["step"] = np.arange(len(frame))
        return WaitChain(event_id, frame, more, causes, max_steps)

    @staticmethod
    def chain_waited_ns(chain: pd.DataFrame) -> int:
        """How long the steps before an event kept it waiting: their durations plus their
        positive slack (the event itself, the chain's last row, is not counted)."""
        lead = chain.iloc[:-1]
        return int(lead["dur_ns"].sum() + lead["slack_ns"].clip(lower=0).fillna(0).sum()) if len(lead) else 0

    def critical_path(self, kernel_id: int, max_steps: int = 1_000_000) -> CriticalPath:
        """The binding chain inside a kernel, from its last-finishing event back to its first."""
        best: tuple[int, int] | None = None
        best_end = None
        for tcode, t in self._tables.items():
            rows = t.rows_of_kernel(kernel_id)
            if len(rows):
                r = int(rows[np.argmax(t.end[rows])])
                if best_end is None or t.end[r] > best_end:
                    best, best_end = (tcode, r), int(t.end[r])
        if best is None:
            kernels = num(self.trace.kernels, "kernel_id")
            if not (kernels == kernel_id).any():
                raise UserError(f"kernel {kernel_id} is not in this trace.")
            raise UserError(f"kernel {kernel_id} has no instruction-level events (capture it with instruction detail).")
        steps = self._walk(best[0], best[1], kernel_id, max_steps)
        start = int(steps["start_ns"].min())
        end = int(steps["end_ns"].max())
        by_track = steps.groupby(["track_id", "track"], as_index=False)["dur_ns"].sum().rename(columns={"dur_ns": "busy_ns"})
        by_track["percent"] = 100.0 * by_track["busy_ns"] / max(end - start, 1)
        by_track = by_track.sort_values("busy_ns", ascending=False, kind="stable").reset_index(drop=True)
        return CriticalPath(kernel_id, steps, by_track, start, end)
