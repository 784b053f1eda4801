"""The timeline's index recorded while a capture writes the trace, so even the first open maps it.

Building the index on first open reads every row of the big tables (track runs, starts order,
disjointness, prefix sums of busy time, which opcodes are used): 15-25 s for 100M events that no
longer sit in memory. The capture has each batch in memory as it writes it; `IndexRecorder`,
set as the writer's observer, does the same arithmetic on those batches (the batches a reader
finds, so the arrays and the colour usage are the very numbers `TraceIndex.build` would compute)
and `save` writes `timeline-index.cache` once the trace is in place. The small `kernels` and
`collectives` tables are indexed from the written files then.

It also validates the trace, so its first open skips that as a reopen does: each batch of the
recorded tables gets the row checks `trnx validate` runs (`semantics.check_rows_of`; starts in
order across batches are the recorder's own check) while it is in memory, as do every batch's
dictionary codes (the scan a reader makes of each file), and `save` validates the rest of the
trace (the small tables, schemas, meta.json) without reading the big tables' data. Validated on
first open instead, a capture whose pages the page cache had dropped meanwhile was read back
from disk before its first frame (a 28M-event capture's first open took 3.9 s against 0.5-1 s).
An index of a trace that does not validate says so, and its first open reports the problem.

Anything the recorder does not understand (a partitioned or ungrouped table, starts out of
order, a negative duration) makes it give up: the index is then built on first open, as before.

A trace with no index (from elsewhere, or its cache deleted) gets the same arithmetic over the
batches read back from its files (`scan`): one compiled pass per batch of its big tables instead
of `TraceIndex.build`'s several numpy passes and the colours' pass (a 100M-event trace: ~1 s of
CPU against ~3.5 s), without the row checks, which the window runs after its first frame.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from explorer.model.table_chunks import array_numpy
from explorer.model.timeline import colour_codes, index_cache, scan_ahead
from explorer.model.timeline.event_table import EventTable
from explorer.model.timeline.lod import is_disjoint
from explorer.model.timeline.trace_index import SAVE_MIN_EVENTS, _prefix_sum
from simcore.errors import TraceFormatError, UserError
from simcore.jit import njit
from simcore.trace import open_trace
from simcore.trace import semantics

RECORDED = ("instructions", "dma")  # the tables that grow with the trace; the others are read at save
READ_AT_SAVE = ("kernels", "collectives")
CHECKED_ONLY = ("flows",)  # big tables whose rows are checked as written but not indexed


OK, NEGATIVE, UNSORTED = 0, 1, 2


@njit(cache=True, nogil=True)
def _scan(track, start, dur, codes, count, time, cum, carry):  # pragma: no cover - compiled
    """One pass over a batch: its runs of one track (first row, whether a row starts before the
    previous ended), the running busy time after each row (from `carry`), and the events and time
    per category code (`count`, `time`: this batch's, summed in row order as np.bincount does).
    Returns (status, run first rows, run overlaps)."""
    n = len(track)
    runs = 1
    for i in range(1, n):
        if track[i] != track[i - 1]:
            runs += 1
    first = np.zeros(runs, np.int64)
    overlap = np.zeros(runs, np.bool_)
    status = OK
    r = 0
    acc = carry
    for i in range(n):
        d = dur[i]
        if d < 0:
            status = NEGATIVE
        if i > 0:
            if track[i] != track[i - 1]:
                r += 1
                first[r] = i
            else:
                if start[i] < start[i - 1]:
                    status = UNSORTED
                if start[i] < start[i - 1] + dur[i - 1]:
                    overlap[r] = True
        acc += d
        cum[i] = acc
        c = codes[i]
        count[c] += 1
        time[c] += d
    return status, first, overlap


@dataclass
class _Pass:
    """One batch's compiled pass (`_Table.compiled_pass`), before it is joined to the table's."""

    track: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    status: int
    first: np.ndarray  # first row of each run of one track
    overlap: np.ndarray  # per run: a row starts before the previous one ended
    count: np.ndarray  # events per category code, this batch's
    time: np.ndarray  # event time per category code, summed in row order


class _Usage:
    """(events, event time) per category of a dictionary-coded key, as `colour_codes.usage` counts
    them: each batch's sums (in row order) added in batch order, so the float sums are the same;
    the arrays grow as the vocabularies do."""

    def __init__(self, dims: int) -> None:
        self.count = np.zeros((1,) * dims, np.int64)
        self.time = np.zeros((1,) * dims, np.float64)

    def add(self, count: np.ndarray, time: np.ndarray) -> None:
        if count.shape != self.count.shape:
            shape = tuple(max(a, b) for a, b in zip(self.count.shape, count.shape))
            self.count, self.time = _grow(self.count, shape), _grow(self.time, shape)
        view = tuple(slice(0, k) for k in count.shape)
        self.count[view] += count
        self.time[view] += time


def _grow(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


class _Table:
    """One recorded table: runs, order and disjointness per run, busy-time prefix sums, usage."""

    def __init__(self, name: str, rows: int | None = None, reserved: scan_ahead.Reserved | None = None) -> None:
        self.name = name
        self.rows = 0
        self.spool: index_cache.Spool | None = None  # takes the prefix sums as they are computed (a capture's)
        self._buf = np.empty(0, np.int64)  # (their memory then, reused batch after batch)
        # the prefix sums: one array when the table's rows are known (`scan`), else a chunk a batch
        self.whole_cum = None
        if rows is not None:
            self.whole_cum = reserved.take(name, rows + 1) if reserved is not None else np.empty(rows + 1, np.int64)
        if self.whole_cum is not None:
            self.whole_cum[0] = 0
        self.run_track: list[int] = []
        self.run_lo: list[int] = []
        self.disjoint: list[bool] = []
        self.seen: set[int] = set()
        self.last: tuple[int, int, int] | None = None  # track, start, end of the last row
        self.cum: list[np.ndarray] = [np.zeros(1, np.int64)]
        self.usage = _Usage(2 if name == "dma" else 1)
        self.vocab: dict[str, int] = {}  # dictionary column -> its vocabulary's size in the batches written

    def add(self, batch: pa.RecordBatch) -> str | None:
        """Take one batch; a reason to give up, or None."""
        n = batch.num_rows
        if self.whole_cum is not None:
            if self.rows + n + 1 > len(self.whole_cum):
                return f"{self.name}: more rows than the table has"
            cum, carry = self.whole_cum[self.rows + 1:self.rows + 1 + n], int(self.whole_cum[self.rows])
        elif self.spool is not None:
            if len(self._buf) < n:
                self._buf = np.empty(n, np.int64)
            cum, carry = self._buf[:n], self.carry
        else:
            cum, carry = np.empty(n, np.int64), self.carry
        return self.take(batch, self.compiled_pass(batch, cum, carry), cum)

    def compiled_pass(self, batch: pa.RecordBatch, cum: np.ndarray, carry: int) -> _Pass:
        """The batch's compiled pass, its prefix sums written into `cum` from `carry`: touches no
        state of the table, so batches can be passed on several threads and taken in order."""
        t, s, d = (array_numpy(batch.column(n)) for n in ("track_id", "start_ns", "dur_ns"))
        if self.name == "instructions":
            op = batch.column("opcode")
            codes, sizes = array_numpy(op.indices), (len(op.dictionary),)
        else:
            src, dst = batch.column("src"), batch.column("dst")
            sizes = (len(src.dictionary), len(dst.dictionary))
            codes = array_numpy(src.indices).astype(np.int64) * sizes[1] + array_numpy(dst.indices)
        count, time = np.zeros(sizes, np.int64), np.zeros(sizes, np.float64)
        status, first, overlap = _scan(t, s, d, codes, count.reshape(-1), time.reshape(-1), cum, carry)
        return _Pass(t, s, d, status, first, overlap, count, time)

    def take(self, batch: pa.RecordBatch, p: _Pass, cum: np.ndarray) -> str | None:
        """Join a batch's pass to the batches taken before it (in row order); a reason to give up, or None."""
        t, s, d = p.track, p.start, p.dur
        if p.status == NEGATIVE:
            return f"{self.name}: a negative duration"
        if p.status == UNSORTED:
            return f"{self.name}: starts out of order in a track"
        for i, a in enumerate(p.first):
            track, start = int(t[a]), int(s[a])
            if i == 0 and self.last is not None and self.last[0] == track:  # the previous batch's run goes on
                if start < self.last[1]:
                    return f"{self.name}: starts out of order in a track"
                self.disjoint[-1] = self.disjoint[-1] and start >= self.last[2] and not bool(p.overlap[0])
                continue
            if track in self.seen:
                return f"{self.name}: a track's rows are not contiguous"
            self.seen.add(track)
            self.run_track.append(track)
            self.run_lo.append(self.rows + int(a))
            self.disjoint.append(not bool(p.overlap[i]))
        self.last = (int(t[-1]), int(s[-1]), int(s[-1]) + int(d[-1]))
        for name, col in zip(batch.schema.names, batch.columns):  # the vocabularies so far (the file's, read
            if pa.types.is_dictionary(col.type):                  # back, are its last batch's)
                self.vocab[name] = max(self.vocab.get(name, 0), len(col.dictionary))
        if self.whole_cum is None:
            self._keep(cum)
        self.rows += len(t)
        self.usage.add(p.count, p.time)
        return None

    @property
    def carry(self) -> int:
        """The busy time before the next row."""
        return self._carry if self.rows else 0

    def _keep(self, cum: np.ndarray) -> None:
        """This batch's prefix sums: to the spool, else (or once another table's sums went to the
        spool after this one's: rows written interleaved) into memory."""
        self._carry = int(cum[-1])
        key = f"{self.name}.cum"
        if self.spool is not None:
            if self.rows == 0:
                self.spool.append(key, self.cum[0])  # (the leading 0)
            if self.spool.append(key, cum):
                return
            self.cum, self.spool = [self.spool.read(key)], None
        self.cum.append(cum.copy() if cum.base is self._buf else cum)

    def arrays(self) -> dict[str, np.ndarray | list[np.ndarray] | None]:
        """The index's arrays of this table (None: the prefix sums are in the spool)."""
        return {f"{self.name}.run_track": np.array(self.run_track, np.int64),
                f"{self.name}.run_lo": np.array(self.run_lo, np.int64),
                f"{self.name}.disjoint": np.array(self.disjoint, bool),
                f"{self.name}.cum": None if self.spool is not None and f"{self.name}.cum" in self.spool.placed else
                self.cum if self.whole_cum is None else self.whole_cum}  # (chunks: written one after another)

    def opcode_usage(self, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """(count, time) per local category of `colour_codes.sources(..., "opcode")`: the final
        vocabularies' sizes (`vocab`: column -> size)."""
        if self.name == "instructions":
            n = vocab["opcode"]
            return _grow(self.usage.count, (n,)), _grow(self.usage.time, (n,))
        shape = (vocab["src"], max(vocab["dst"], 1))
        return _grow(self.usage.count, shape).ravel(), _grow(self.usage.time, shape).ravel()


class IndexRecorder:
    """A TraceWriter observer (`writer.observer = recorder`); `save(path)` once the trace is written.

    Given the writer (`writing_to`, as simcore.capture does), the recorder writes the index into the
    trace being written: the prefix sums as each batch is observed (the writer's prepare thread,
    beside the simulation, instead of ~0.7 GB written after a 100M-event trace), the rest when the
    writer closes, before the trace is moved into place, so the trace appears with its index and a
    write that fails takes both."""

    def __init__(self) -> None:
        self.tables = {name: _Table(name) for name in RECORDED}
        self.gave_up: str | None = None
        self._companion: Callable[[str], Path] | None = None  # the writer's, once `writing_to` gave it
        self._spool: index_cache.Spool | None = None
        self.saved: bool | None = None  # what the save inside the writer's close gave
        self.n_tracks: int | None = None  # the tracks table's rows, once written
        self.unchecked: str | None = None  # why the recorded rows are not all checked (None: they are)
        self.checked_rows = dict.fromkeys(CHECKED_ONLY, 0)  # rows of those tables seen (all checked if unchecked is None)

    def __call__(self, table: str, chip: int | None, batch: pa.RecordBatch) -> None:
        if self.unchecked is None:
            self._check_codes(table, batch)
        if table == "tracks" and chip is None:
            self.n_tracks = (self.n_tracks or 0) + batch.num_rows
            return
        if table in self.checked_rows:
            self.checked_rows[table] += batch.num_rows
            if self.unchecked is None:
                self._check(table, batch)
            return
        if self.gave_up is not None or table not in self.tables:
            return
        if chip is not None:
            self.gave_up = f"{table} is partitioned per chip"
            return
        if self._companion is not None:
            self._open_spool()
        self.gave_up = self.tables[table].add(batch)
        if self.gave_up is None and self.unchecked is None:
            self._check(table, batch)

    def _check_codes(self, table: str, batch: pa.RecordBatch) -> None:
        """Every dictionary code of every batch written is within its dictionary (what a reader
        scans each file's codes for), so reading the trace back at save scans none."""
        for name, col in zip(batch.schema.names, batch.columns):
            if pa.types.is_dictionary(col.type) and len(col):
                top = pc.max(col.indices.view(pa.uint32())).as_py()  # as unsigned, a negative code is huge
                if top is not None and top >= len(col.dictionary):
                    self.unchecked = f"{table}.{name}: a dictionary code out of range"
                    return

    def _check(self, table: str, batch: pa.RecordBatch) -> None:
        """`trnx validate`'s row checks on one batch (tracks counted from the tracks written before)."""
        n_tracks = self.n_tracks
        if n_tracks is None:
            if table in semantics.TRACK_TABLES:
                self.unchecked = f"{table} rows came before the tracks"
                return
            n_tracks = 0  # (a table naming no track: flows stream out before the tracks are written)
        try:
            semantics.check_rows_of(Path(table), table, pa.Table.from_batches([batch]), n_tracks)
        except TraceFormatError as exc:
            self.unchecked = str(exc)

    def writing_to(self, writer: Any) -> None:
        """Write the index inside the trace `writer` (a TraceWriter) writes: its prefix sums as they
        are computed, the rest just before the trace is moved into place (`writer.finishing`)."""
        self._companion = writer.companion
        writer.finishing = self._finish

    def _open_spool(self) -> None:
        """(First recorded batch.) The index file inside the trace being written, for the prefix sums."""
        companion, self._companion = self._companion, None
        try:
            self._spool = index_cache.Spool(companion(index_cache.CACHE_FILE))
        except OSError:  # the sums stay in memory, and the index is saved as without the writer
            return
        for t in self.tables.values():
            t.spool = self._spool

    def _finish(self, directory: Path) -> None:
        self.saved = self.save(directory)

    def save(self, path: str | Path) -> bool:
        """Write the index into the trace at `path`; False when it was not worth it (under
        SAVE_MIN_EVENTS events), the recorder gave up, or the directory refused the file. Once
        the writer's close saved it (`writing_to`), what that gave."""
        if self.saved is not None:
            return self.saved
        try:
            if self.gave_up is not None or not any(t.rows for t in self.tables.values()):
                return False
            return self._save(path)
        except (UserError, OSError):  # not there, not readable, a table the index refuses: it is only a cache
            return False
        finally:
            spool, self._spool = self._spool, None
            if spool is not None and not spool.closed:  # not finished: never left half-written
                spool.discard()

    def _save(self, path: str | Path) -> bool:
        trace = open_trace(path, validate=False, checksums=False)  # the writer hashed these bytes as it wrote them
        trace.codes_checked = self.unchecked is None  # every batch's codes were checked as it was written
        if sum(trace.row_count(n) for n in (*RECORDED, *READ_AT_SAVE)) < SAVE_MIN_EVENTS:
            return False
        if any(trace.row_count(n) != t.rows for n, t in self.tables.items()):
            return False  # rows written some other way than through this recorder
        arrays: dict[str, np.ndarray | list[np.ndarray]] = {}
        usage: dict[str, list] = {}
        for name, t in self.tables.items():
            arrays.update(t.arrays())
            cols = ("opcode",) if name == "instructions" else ("src", "dst")
            sizes = {c: t.vocab.get(c, 0) for c in cols}  # what the file holds, without mapping it
            count, time = t.opcode_usage(sizes)
            usage[name] = [count.tolist(), time.tolist()]
        _index_small_tables(trace, arrays, usage)
        info = {"validated": self._validate(trace), "usage": {"opcode": usage}}
        if self._spool is not None:
            return self._spool.finish(trace, _ordered(arrays), info)
        return index_cache.save(trace, _ordered(arrays), info)

    def _validate(self, trace) -> bool:
        """The whole trace validates, the recorded tables' rows checked as they were written."""
        if self.unchecked is not None:
            return False
        checked = RECORDED + tuple(n for n, rows in self.checked_rows.items() if trace.row_count(n) == rows)
        try:
            trace.validate(rows_checked=checked)
        except TraceFormatError:  # the first open validates again and says what is wrong
            return False
        return True



def _index_small_tables(trace, arrays: dict, usage: dict) -> None:
    """The index arrays and opcode usage of the small tables (`READ_AT_SAVE`), read from the files."""
    for name in READ_AT_SAVE:
        events = EventTable(name, trace.table(name))
        layout = events.layout
        arrays[f"{name}.run_track"] = layout.run_track
        arrays[f"{name}.run_lo"] = layout.run_lo
        if layout.order is not None:
            arrays[f"{name}.order"] = layout.order
        arrays[f"{name}.disjoint"] = np.array(
            [is_disjoint(*events.lane_arrays(lo, hi)) for lo, hi in events.bounds.values()], bool)
        arrays[f"{name}.cum"] = _prefix_sum(events)
        source = colour_codes.sources({name: events}, "opcode", None)[name]
        count, time = colour_codes.usage(events, source)
        usage[name] = [count.tolist(), time.tolist()]


def _ordered(arrays: dict) -> dict:
    return {f"{n}.{k}": arrays[f"{n}.{k}"] for n in (*RECORDED, *READ_AT_SAVE)
            for k in ("run_track", "run_lo", "order", "disjoint", "cum") if f"{n}.{k}" in arrays}


def scan(trace, reserved: scan_ahead.Reserved | None = None) -> index_cache.SavedIndex | None:
    """The index of a trace that has none, from its files, in memory (`SavedIndex.persisted` false:
    `TraceIndex.save` writes it): the recorder's pass over each batch of its big tables as read
    back, on two threads (`_scan_table`). No row is checked (only the dictionary codes, as the
    reader scans them; the caller validates the trace). None where the recorder gives up (a table
    not grouped by track, starts out of order, a negative duration): `TraceIndex.build` then
    indexes it as before, and says what is wrong. `reserved`: its tables read and the prefix sums'
    arrays given their pages while this module loaded (`scan_ahead.reserve`)."""
    arrays: dict[str, np.ndarray] = {}
    usage: dict[str, list] = {}
    if reserved is not None:
        reserved.wait()  # (it reads the tables: read here too, they would be read twice)
    for name in RECORDED:
        table = trace.table(name)
        t = _Table(name, table.num_rows, reserved)
        if _scan_table(t, [b for b in table.to_batches() if b.num_rows]) is not None:
            return None
        if not t.rows or t.rows != table.num_rows:  # (an empty table has no vocabulary to size its usage by)
            return None
        arrays.update(t.arrays())
        cols = ("opcode",) if name == "instructions" else ("src", "dst")
        count, time = t.opcode_usage({c: t.vocab.get(c, 0) for c in cols})
        usage[name] = [count.tolist(), time.tolist()]
    _index_small_tables(trace, arrays, usage)
    return index_cache.SavedIndex({"validated": False, "usage": {"opcode": usage}}, _ordered(arrays), persisted=False)


SPLIT_MIN_ROWS = 1 << 20  # fewer rows than this are passed on one thread (a thread costs more than it saves)


def _scan_table(t: _Table, batches: list[pa.RecordBatch]) -> str | None:
    """`t.add` of each batch, the compiled passes of the first and second half of the rows on two
    threads (the pass releases the GIL; a 100M-event trace's ~1.3 s of it halves where a core is
    free). The second half's prefix sums start from 0 and get the first half's total added after;
    integer sums, so they are the very numbers one pass in order finds. Each batch's usage is its
    own, added in batch order when the passes are taken, so the float sums are the same too."""
    cum = t.whole_cum
    assert cum is not None  # (`scan` knows the rows)
    edges = np.concatenate([[0], np.cumsum([b.num_rows for b in batches], dtype=np.int64)])
    if edges[-1] + 1 > len(cum):
        return f"{t.name}: more rows than the table has"
    passes: list[_Pass | None] = [None] * len(batches)

    def run(lo: int, hi: int) -> None:
        carry = 0
        for i in range(lo, hi):
            out = cum[edges[i] + 1:edges[i + 1] + 1]
            passes[i] = t.compiled_pass(batches[i], out, carry)
            carry = int(out[-1])

    k = int(np.searchsorted(edges, edges[-1] // 2))  # the first batch of the second half
    if edges[-1] < SPLIT_MIN_ROWS or not 0 < k < len(batches):
        run(0, len(batches))
    else:
        _on_two_threads(lambda: run(0, k), lambda: run(k, len(batches)))
        rest, total = cum[edges[k] + 1:edges[-1] + 1], cum[edges[k]]  # the first half's busy time
        mid = len(rest) // 2
        _on_two_threads(lambda: np.add(rest[:mid], total, out=rest[:mid]),
                        lambda: np.add(rest[mid:], total, out=rest[mid:]))  # (numpy lets go of the GIL)
    for batch, p, lo, hi in zip(batches, passes, edges[:-1], edges[1:]):
        reason = t.take(batch, p, cum[lo + 1:hi + 1])
        if reason is not None:
            return reason
    return None


def _on_two_threads(here, there) -> None:
    """Run `there` on a thread of its own while `here` runs on this one; re-raise what either raised."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            there()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failed.append(exc)

    other = threading.Thread(target=run, name="index-scan", daemon=True)
    other.start()
    try:
        here()
    finally:
        other.join()
    if failed:
        raise failed[0]
