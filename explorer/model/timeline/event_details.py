"""Everything the details panel shows about one event, and its dependencies.

Fields come straight from the event's table row, its kernel -> op -> layer path and
the `flows` table (edges whose source or destination is the event), so the GUI only
lays them out. Dependencies carry `EventRef`s the panel turns into jump links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import weakref

import numpy as np

from explorer.model.flow_index import FlowIndex
from explorer.model.table_chunks import ChunkedColumn, batches
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from explorer.model.units import format_bytes, format_count, format_ns, format_rate_gbps

MAX_DEPENDENCIES = 200


@dataclass(frozen=True)
class Dependency:
    direction: str  # "waits for" (this event depends on it) or "unblocks" (it depends on this one)
    kind: str  # flows.kind: semaphore, data, ...
    ref: EventRef | None  # None when the id is not in the trace
    event_id: int
    label: str  # "MultiplyMoving on TensorMatrix (core 0) at 1.2 us"


@dataclass
class EventDetails:
    ref: EventRef
    title: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    dependencies: list[Dependency] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0
    track_id: int = -1

    def field(self, name: str) -> str | None:
        return next((v for k, v in self.fields if k == name), None)


def describe(index: TraceIndex, ref: EventRef) -> str:
    """One line naming an event and where it ran."""
    lane, _ = index.locate(ref)
    t = lane.track
    lc = f", logical core {t.lcore}" if t.lcore >= 0 else ""
    where = t.name if t.core < 0 else f"{t.name} (chip {t.chip} core {t.core}{lc})"
    start, _ = index.interval(ref)
    return f"{index.event_name(ref)} on {where} at {format_ns(start - index.span[0])}"


def event_details(index: TraceIndex, ref: EventRef, with_dependencies: bool = True) -> EventDetails:
    """The details panel's content for `ref`. The fields cost a few row reads; the dependencies a
    pass over the flows (tens of ms at 45M flows), so a window asks for them apart
    (`with_dependencies=False`, then `dependencies` off the GUI thread)."""
    ev = index.tables[ref.table]
    row = ref.row
    lane, _ = index.locate(ref)
    start, end = index.interval(ref)
    t = lane.track
    d = EventDetails(ref, index.event_name(ref), start_ns=start, end_ns=end, track_id=t.track_id)
    f = d.fields
    f.append(("name", d.title))
    f.append(("track", t.name if t.core < 0 else f"{t.name} \u2014 {t.where}"))
    f.append(("start", format_ns(start - index.span[0], digits=8)))
    f.append(("duration", format_ns(end - start)))
    f.append(("end", format_ns(end - index.span[0], digits=8)))
    v = ev.value
    if ref.table in ("instructions", "dma"):
        f.insert(1, ("id", str(v("id", row))))
    if ref.table == "instructions":
        flops, nbytes = v("flops", row), v("bytes", row)
        f.append(("flops", f"{format_count(flops)}FLOP ({flops:,})" if flops else "0"))
        f.append(("bytes", f"{format_bytes(nbytes)} ({nbytes:,})"))
        dur = end - start
        if dur > 0 and flops:
            f.append(("throughput", f"{flops / dur / 1e3:.4g} TFLOP/s"))
        f.append(("dtype", str(v("dtype", row))))
        path = index.kernel_path(int(v("kernel_id", row)))
    elif ref.table == "dma":
        nbytes, parts = v("bytes", row), v("partitions", row)
        f.append(("bytes", f"{format_bytes(nbytes)} ({nbytes:,})"))
        f.append(("source", str(v("src", row))))
        f.append(("destination", str(v("dst", row))))
        f.append(("partitions", f"{parts} ({format_bytes(nbytes / max(parts, 1))} per partition)"))
        if end > start:
            f.append(("bandwidth", format_rate_gbps(nbytes / (end - start))))
        path = index.kernel_path(int(v("kernel_id", row)))
    elif ref.table == "kernels":
        f.append(("flops", f"{format_count(v('flops', row))}FLOP"))
        f.append(("model flops", f"{format_count(v('model_flops', row))}FLOP"))
        f.append(("HBM read", format_bytes(v("hbm_read_bytes", row))))
        f.append(("HBM write", format_bytes(v("hbm_write_bytes", row))))
        f.append(("dtype", str(v("dtype", row))))
        path = index.kernel_path(int(v("kernel_id", row)))
    else:  # collectives
        f.append(("algorithm", str(v("algorithm", row))))
        f.append(("rank", f"{v('rank', row)} of {v('group_size', row)}"))
        f.append(("bytes", format_bytes(v("bytes", row))))
        f.append(("wait", format_ns(v("wait_ns", row))))
        f.append(("transfer", format_ns(v("end_ns", row) - v("start_ns", row))))
        f.append(("algorithm bandwidth", format_rate_gbps(v("algo_bw_gbps", row))))
        f.append(("bus bandwidth", format_rate_gbps(v("bus_bw_gbps", row))))
        path = {"kernel": "", **index.op_path(int(v("op_id", row)))}
    for key in ("kernel", "op", "layer"):
        if path.get(key):
            f.append((key, path[key]))
    if with_dependencies:
        d.dependencies = dependencies_of(index, ref)
    return d


def dependencies_of(index: TraceIndex, ref: EventRef) -> list[Dependency]:
    """`dependencies` of an event by reference: only instructions and DMA transfers have flows."""
    if ref.table not in ("instructions", "dma"):
        return []
    return dependencies(index, int(index.tables[ref.table].value("id", ref.row)))


_FLOWS_INTO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _flows_into(index: TraceIndex):
    """The flows keyed by destination, made once per index (a search of the dst_id chunks in place)."""
    got = _FLOWS_INTO.get(index)
    if got is None:
        got = _FLOWS_INTO[index] = FlowIndex(index.trace.flows, "dst_id")
    return got


def _flows_out(flows, event_id: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(rows, destination ids, kinds) of the flows out of `event_id`: one pass over the src_id
    chunks in place (no whole-column copy; flows are stored by destination, not source)."""
    rows = [np.flatnonzero(c["src_id"] == event_id) + off for off, c, _ in batches(flows, ("src_id",))]
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    rows = rows[:MAX_DEPENDENCIES]
    if not len(rows):
        return rows, rows, []
    dst = ChunkedColumn(flows, "dst_id")[rows].astype(np.int64)
    kinds = [str(flows.column("kind")[int(r)].as_py()) for r in rows.tolist()]
    return rows, dst, kinds


def dependencies(index: TraceIndex, event_id: int) -> list[Dependency]:
    """Flow edges into (waits for) and out of (unblocks) an event, read from the flows in place:
    selecting an event costs a binary search and one vectorised pass over src_id, however many
    flows the trace has (a whole-column copy took seconds per click at 45M flows)."""
    flows = index.trace.flows
    if flows.num_rows == 0:
        return []
    src, kinds = _flows_into(index).edges(event_id)
    _, dst, out_kinds = _flows_out(flows, event_id)
    out = []
    for direction, others, names in (("waits for", src[:MAX_DEPENDENCIES], list(kinds[:MAX_DEPENDENCIES])),
                                     ("unblocks", dst, out_kinds)):
        for oid, kind in zip(others.tolist(), names):
            ref = index.find_id(int(oid))
            label = describe(index, ref) if ref is not None else f"event #{oid} (not in this trace)"
            out.append(Dependency(direction, kind, ref, int(oid), label))
    return out
