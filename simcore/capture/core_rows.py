"""The instruction, DMA and flow rows of a single-chip capture's detailed cores, kept as the timed
programs they come from and turned into rows one track at a time as the trace is written.

The trace groups rows by track (one record batch per track), and a track's rows come from every op
of the step, so no track is complete before the simulation ends. Holding the rows costs ~60 bytes
per event plus 16 per flow (11.5 GB at 100M events); a kernel's schedule costs 16 bytes per
instruction and is shared by every core of its group, and its program by every run of the kernel
(layers repeat their shapes). Flows need no times: they stream to the writer as kernels run, in
the batches the whole-step concatenation gave. The rows written are the same, value for value and
batch for batch, as `program_rows.rows_by_track` gives kernel by kernel.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.capture.column_pool import ColumnPool
from simcore.capture.program_rows import cross_engine_flows
from simcore.lowering.program import DTYPES, MEMORIES, OPCODES, Program
from simcore.trace import TraceWriter
from simcore.trace.background import BackgroundWriter

FLOW_BATCH = 1 << 20  # rows per flows batch
FLOW_KIND = ("semaphore",)  # the vocabulary of the flows' kind column
INSTR_VOCABS = {"opcode": OPCODES.values, "dtype": DTYPES.values}
DMA_VOCABS = {"src": MEMORIES.values, "dst": MEMORIES.values}


class ProgramRows:
    """A program's instructions sorted by engine (stable, so program order within an engine) and
    its cross-engine dependencies as instruction indices: what every run of it shares."""

    def __init__(self, p: Program) -> None:
        n = len(p)
        self.program = p
        self.order = np.argsort(p.engine, kind="stable")
        eng = p.engine[self.order]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(eng)) + 1, [n]]).astype(np.int64)
        # (engine, first, end, is_dma) per engine the program uses, in engine order
        self.spans = [(int(eng[a]), int(a), int(b), bool(p.partitions[self.order[a]] > 0))
                      for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        self.flows = cross_engine_flows(p, np.arange(n, dtype=np.int64))
        self._columns: dict[str, np.ndarray] | None = None

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The program's row columns in engine order (made when the trace is written), so a
        track's chunk of them is a slice."""
        if self._columns is None:
            p, o = self.program, self.order
            self._columns = {"opcode": p.opcode[o].astype(np.int32), "flops": p.flops[o], "bytes": p.bytes[o],
                             "dtype": p.dtype[o].astype(np.int32), "partitions": p.partitions[o].astype(np.int32),
                             "src": p.src[o].astype(np.int32), "dst": p.dst[o].astype(np.int32)}
        return self._columns


@dataclass
class Run:
    """One kernel's schedule on a group of cores: integer start and duration per instruction, in
    its program's engine order."""

    rows: ProgramRows
    start: np.ndarray  # int64 ns
    dur: np.ndarray    # int64 ns


class FlowStream:
    """Flows in kernel order, filled into FLOW_BATCH-row batches, each written once full (kept
    until the end without a writer)."""

    def __init__(self, writer: TraceWriter | BackgroundWriter | None) -> None:
        self.writer = writer
        self.full: list[tuple[np.ndarray, np.ndarray]] = []  # batches waiting for a writer
        self.pool = ColumnPool()  # a written batch's memory holds the next one
        self._kind = np.zeros(FLOW_BATCH, np.int32)  # every flow's kind: code 0 of FLOW_KIND
        self._new()

    def _new(self) -> None:
        cols = self.pool.columns(FLOW_BATCH, {"src": np.int64, "dst": np.int64})
        self.src, self.dst = cols["src"], cols["dst"]
        self.pos = 0

    def add(self, src: np.ndarray, dst: np.ndarray, offset: int) -> None:
        """Append flows `src + offset -> dst + offset`."""
        i, n = 0, len(src)
        while i < n:
            k = min(n - i, FLOW_BATCH - self.pos)
            np.add(src[i:i + k], offset, out=self.src[self.pos:self.pos + k])
            np.add(dst[i:i + k], offset, out=self.dst[self.pos:self.pos + k])
            self.pos += k
            i += k
            if self.pos == FLOW_BATCH:
                self.full.append((self.src, self.dst))
                self._new()
                if self.writer is not None:
                    self._emit(self.writer)

    def _emit(self, w: TraceWriter | BackgroundWriter) -> None:
        for src, dst in self.full:  # (the kind as codes and vocabulary: the same column as the string gives)
            w.write("flows", {"src_id": src, "dst_id": dst, "kind": (self._kind[:len(src)], FLOW_KIND)})
        self.full = []

    def finish(self, writer: TraceWriter | BackgroundWriter) -> None:
        self._emit(writer)
        if self.pos:
            self.full.append((self.src[:self.pos], self.dst[:self.pos]))
            self._emit(writer)
        self._new()


class DetailRows:
    """Every detailed core's runs, in the order the core ran them, with their kernel and first event ids."""

    def __init__(self, writer: TraceWriter | BackgroundWriter | None = None) -> None:
        self.layouts: dict[int, ProgramRows] = {}  # id(program) -> its rows (which keep the program alive)
        self.per_core: dict[int, list[tuple[Run, int, int]]] = {}  # core -> (run, kernel id, first id)
        self.flows = FlowStream(writer)

    def run(self, p: Program, start: np.ndarray, end: np.ndarray) -> Run:
        """The schedule of `p` (integer start and end ns), to be added to each core that ran it."""
        rows = self.layouts.get(id(p))
        if rows is None:
            rows = self.layouts[id(p)] = ProgramRows(p)
        o = rows.order
        return Run(rows, start[o], end[o] - start[o])

    def add(self, core: int, run: Run, kernel_id: int, first_id: int) -> None:
        self.per_core.setdefault(core, []).append((run, kernel_id, first_id))
        f = run.rows.flows
        if f is not None:
            self.flows.add(f[0], f[1], first_id)

    def tracks(self, engine_base: dict[int, int], dma: bool) -> dict[int, list[tuple[Run, int, int, int, int]]]:
        """Track -> its chunks (run, kernel id, first id, span start, span end) for one table."""
        out: dict[int, list[tuple[Run, int, int, int, int]]] = {}
        for core, runs in self.per_core.items():
            base = engine_base[core]
            for run, kid, first in runs:
                for eng, a, b, is_dma in run.rows.spans:
                    if is_dma == dma:
                        out.setdefault(base + eng, []).append((run, kid, first, a, b))
        return out


def _signature(chunks: list[tuple[Run, int, int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """What a track's rows are made of apart from its ids and kernels: its runs and their spans."""
    return tuple((id(run), a, b) for run, _, _, a, b in chunks)


class SharedColumns:
    """The columns that tracks made of the same runs have in common, built once for all of them.

    The cores of a group run the same schedule (one `Run` for all of them), so their tracks of one
    engine hold the same start, duration, opcode, FLOPs, bytes and dtype columns (for DMA: start,
    duration, bytes, partitions, source, destination); only the event and kernel ids differ. In
    a 100M-event capture of 8 cores that is ~85% of the rows, ~3 GB the tracks no longer copy.
    The columns are kept from the first such track until the last one is built (the runs they
    were made from are alive meanwhile: DetailRows holds them, so their ids stay theirs)."""

    def __init__(self, tracks: Iterable[list[tuple[Run, int, int, int, int]]]) -> None:
        self._left = Counter(_signature(c) for c in tracks)
        self._kept: dict[tuple, dict[str, np.ndarray]] = {}
        self.reused = 0  # tracks that took another's columns (a test's figure)

    def take(self, chunks: list[tuple[Run, int, int, int, int]]) -> tuple[tuple, dict[str, np.ndarray] | None]:
        """(the chunks' signature, the columns an earlier track of it built, or None)."""
        key = _signature(chunks)
        self._left[key] -= 1
        got = self._kept.get(key)
        if got is not None:
            self.reused += 1
            if not self._left[key]:
                del self._kept[key]
        return key, got

    def built(self, key: tuple, cols: dict[str, np.ndarray]) -> None:
        """The columns of `key` just built: kept while tracks of it are still to come."""
        if self._left[key] > 0:
            self._kept[key] = cols


def track_rows(chunks: list[tuple[Run, int, int, int, int]], dma: bool, pool: ColumnPool | None = None,
               track: int | None = None, shared: SharedColumns | None = None) -> dict[str, Any]:
    """One track's rows (its chunks in order) as the columns `rows_by_track` gives, concatenated;
    with `track`, a `track_id` column first. `pool`: where the columns' memory comes from; `shared`:
    the columns tracks of the same runs have in common, taken from there when an earlier one built them."""
    n = sum(b - a for _, _, _, a, b in chunks)
    names = (("id", "start_ns", "dur_ns", "bytes", "partitions", "src", "dst", "kernel_id") if dma else
             ("id", "start_ns", "dur_ns", "opcode", "kernel_id", "flops", "bytes", "dtype"))
    small = {"opcode", "dtype", "partitions", "src", "dst"}  # the schema's int32 columns
    dtypes = {k: np.int32 if k in small else np.int64 for k in names}
    if track is not None:
        dtypes = {"track_id": np.int32, **dtypes}
    own = ("track_id", "id", "kernel_id")  # what differs between tracks of the same runs
    pool = pool or ColumnPool()
    cols = pool.columns(n, {k: t for k, t in dtypes.items() if k in own})
    key, common = (None, None) if shared is None else shared.take(chunks)
    fill = common is None
    if fill:
        common = pool.columns(n, {k: t for k, t in dtypes.items() if k not in own})
    if track is not None:
        cols["track_id"].fill(track)
    copied = [k for k in names if k not in ("id", "start_ns", "dur_ns", "kernel_id")]
    o = 0
    for run, kid, first, a, b in chunks:
        end = o + b - a
        np.add(run.rows.order[a:b], first, out=cols["id"][o:end])
        cols["kernel_id"][o:end] = kid
        if fill:
            common["start_ns"][o:end] = run.start[a:b]
            common["dur_ns"][o:end] = run.dur[a:b]
            src = run.rows.columns
            for k in copied:
                common[k][o:end] = src[k][a:b]
        o = end
    if fill and shared is not None:
        shared.built(key, common)
    return {k: cols[k] if k in own else common[k] for k in dtypes}
