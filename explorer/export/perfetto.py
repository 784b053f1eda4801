"""Export a trace as a Perfetto protobuf trace (a `Trace` of `TracePacket`s) for ui.perfetto.dev.

Layout: one process track per chip (`chip N`), a child track per engine row
(`core 0 TensorMatrix`, `qSyncIO0`, ...) ordered by track id, a counter track per
counter row. Every interval is a TrackEvent slice (BEGIN + END packet) whose name
is interned once per distinct string; counters are TYPE_COUNTER events; flows are
`flow_ids` / `terminating_flow_ids` on the slices they join.

Descriptors, interned names and the few slices that carry flows are built with the
`perfetto` package's generated protobuf classes. The millions of plain slice and
counter packets are encoded straight to wire format with numpy (varints for whole
columns at once); a test parses the output back with the protobuf classes. A
serialized `Trace` is the concatenation of its packets, so the file is streamed
batch by batch and written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import numpy as np
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from simcore.atomic import atomic_path
from simcore.trace import Trace
from explorer.export import annotation_events
from explorer.export import timeline_rows as R
from explorer.export.selection import export_scope

SEQ_ID = 1
PROCESS_UUID_BASE = 1 << 40  # track uuids are track_id + 1; chips live far above them
_SHIFTS = (np.arange(10, dtype=np.uint64) * np.uint64(7))
_LIMITS = np.left_shift(np.uint64(1), _SHIFTS[1:])


def _varints(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protobuf varints of uint64 values: (n x w byte matrix, byte count per value), w = the longest."""
    u = np.asarray(v).astype(np.uint64)
    if len(u) == 0:
        return np.zeros((0, 1), dtype=np.uint8), np.zeros(0, dtype=np.int64)
    lens = 1 + (u[:, None] >= _LIMITS[None, :]).sum(axis=1)
    w = int(lens.max())
    groups = (u[:, None] >> _SHIFTS[None, :w]) & np.uint64(0x7F)
    cont = np.arange(w)[None, :] < (lens[:, None] - 1)
    return (groups | (cont.astype(np.uint64) << np.uint64(7))).astype(np.uint8), lens.astype(np.int64)


def _const(*byte_values: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([byte_values], dtype=np.uint8), np.array([len(byte_values)], dtype=np.int64)


def _rows(segments: list[tuple[np.ndarray, np.ndarray]], n: int) -> bytes:
    """Concatenate, row by row, variable-length byte segments (each an n x w matrix + lengths).

    All segments side by side form one n x W matrix; masking off each segment's unused
    tail and reading the rest in row-major order is exactly the concatenation."""
    mats, masks = [], []
    for m, lens in segments:
        w = m.shape[1]
        mats.append(np.broadcast_to(m, (n, w)))
        masks.append(np.arange(w)[None, :] < np.broadcast_to(lens, (n,))[:, None])
    return np.concatenate(mats, axis=1)[np.concatenate(masks, axis=1)].tobytes()


def _packets(body: list[tuple[np.ndarray, np.ndarray]], n: int) -> bytes:
    """Wrap n packet bodies as `Trace.packet` entries (tag 0x0A + length; bodies are < 128 bytes)."""
    body_len = sum(np.broadcast_to(l, (n,)) for _, l in body)
    assert int(np.max(body_len)) < 128
    return _rows([_const(0x0A), (body_len.astype(np.uint8)[:, None], np.ones(n, dtype=np.int64)), *body], n)


def _track_event(ts: np.ndarray, event: list[tuple[np.ndarray, np.ndarray]], n: int) -> bytes:
    te_len = sum(np.broadcast_to(l, (n,)) for _, l in event)
    ts_b = _varints(np.maximum(ts, 0))
    body = [
        _const(0x40), ts_b,                  # timestamp (8)
        _const(0x50, SEQ_ID, 0x68, 0x02),    # trusted_packet_sequence_id (10), sequence_flags (13) = NEEDS_INCREMENTAL_STATE
        _const(0x5A), (te_len.astype(np.uint8)[:, None], np.ones(n, dtype=np.int64)),  # track_event (11)
        *event,
    ]
    return _packets(body, n)


def encode_slices(track_uuid: np.ndarray, start: np.ndarray, dur: np.ndarray, name_iid: np.ndarray) -> bytes:
    """BEGIN/END packet pairs for slices, wire-encoded for whole columns at once."""
    n = len(start)
    if n == 0:
        return b""
    ts = np.empty(2 * n, dtype=np.int64)
    ts[0::2], ts[1::2] = start, start + dur
    kind = np.empty((2 * n, 1), dtype=np.uint8)
    kind[0::2], kind[1::2] = 1, 2  # TYPE_SLICE_BEGIN, TYPE_SLICE_END
    uuid = np.repeat(track_uuid, 2)
    iid_b, iid_l = _varints(np.repeat(name_iid, 2))
    iid_l = iid_l.copy()
    iid_l[1::2] = -1  # END carries no name: drop the tag byte and the varint
    event = [
        _const(0x48), (kind, np.ones(2 * n, dtype=np.int64)),  # type (9)
        _const(0x58), _varints(uuid),                         # track_uuid (11)
        (np.full((2 * n, 1), 0x50, dtype=np.uint8), np.where(iid_l > 0, 1, 0)),  # name_iid (10)
        (iid_b, np.maximum(iid_l, 0)),
    ]
    return _track_event(ts, event, 2 * n)


def encode_counters(track_uuid: np.ndarray, time: np.ndarray, value: np.ndarray) -> bytes:
    n = len(time)
    if n == 0:
        return b""
    dbl = np.ascontiguousarray(value, dtype="<f8").view(np.uint8).reshape(n, 8)
    event = [
        _const(0x48, 0x04),            # type = TYPE_COUNTER
        _const(0x58), _varints(track_uuid),
        _const(0xE1, 0x02), (dbl, np.full(n, 8, dtype=np.int64)),  # double_counter_value (44, fixed64)
    ]
    return _track_event(time, event, n)


def _write_packet(fh: IO[bytes], packet: pb.TracePacket) -> None:
    trace = pb.Trace()
    trace.packet.append(packet)
    fh.write(trace.SerializeToString())


def _descriptors(fh: IO[bytes], tracks: R.TrackInfo, word: str) -> int:
    first = pb.TracePacket()
    first.trusted_packet_sequence_id = SEQ_ID
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED  # starts the sequence's interning
    _write_packet(fh, first)
    n = 1
    for chip in sorted(set(tracks.chip.tolist())):
        p = pb.TracePacket()
        d = p.track_descriptor
        d.uuid = PROCESS_UUID_BASE + chip
        d.process.pid = chip + 1  # pid 0 is the kernel's idle task in Perfetto
        d.process.process_name = f"{word} {chip}"
        d.child_ordering = pb.TrackDescriptor.EXPLICIT
        _write_packet(fh, p)
        n += 1
    for i, tid in enumerate(tracks.ids.tolist()):
        p = pb.TracePacket()
        d = p.track_descriptor
        d.uuid = tid + 1
        d.parent_uuid = PROCESS_UUID_BASE + int(tracks.chip[i])
        d.name = tracks.label(i)
        d.sibling_order_rank = tid
        if tracks.kind[i] == "counter":
            d.counter.unit_name = tracks.unit[i]
        _write_packet(fh, p)
        n += 1
    return n


def _intern(fh: IO[bytes], vocab: list[str], base: int) -> None:
    p = pb.TracePacket()
    p.trusted_packet_sequence_id = SEQ_ID
    p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    for code, name in enumerate(vocab):
        e = p.interned_data.event_names.add()
        e.iid = base + code + 1
        e.name = name
    _write_packet(fh, p)


def _flow_slices(fh: IO[bytes], b: R.SliceBatch, rows: np.ndarray, base: int,
                 out_flows: dict[int, list[int]], in_flows: dict[int, list[int]]) -> int:
    """Slices that start or end a flow, built as messages (few of them)."""
    for i in rows.tolist():
        eid = int(b.ids[i])  # type: ignore[index]
        for kind, ts in ((pb.TrackEvent.TYPE_SLICE_BEGIN, int(b.start[i])), (pb.TrackEvent.TYPE_SLICE_END, int(b.start[i] + b.dur[i]))):
            p = pb.TracePacket()
            p.timestamp = max(ts, 0)
            p.trusted_packet_sequence_id = SEQ_ID
            p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
            e = p.track_event
            e.type = kind
            e.track_uuid = int(b.track[i]) + 1
            if kind == pb.TrackEvent.TYPE_SLICE_BEGIN:
                e.name_iid = base + int(b.name[i]) + 1
                e.flow_ids.extend(out_flows.get(eid, ()))
                e.terminating_flow_ids.extend(in_flows.get(eid, ()))
            _write_packet(fh, p)
    return 2 * len(rows)


def export_perfetto(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    """Write the selected part of `trace` as a Perfetto trace; returns the number of packets."""
    sel = export_scope(trace, options)
    tracks = R.track_info(trace, sel)
    word = "rank" if trace.meta.get("source") == "kineto" else "chip"
    flows = R.flows(trace, sel, tracks.selected)
    out_flows: dict[int, list[int]] = {}
    in_flows: dict[int, list[int]] = {}
    for k, (s, d) in enumerate(zip(flows.src_id.tolist(), flows.dst_id.tolist())):
        out_flows.setdefault(s, []).append(k + 1)
        in_flows.setdefault(d, []).append(k + 1)
    flow_events = np.array(sorted(set(out_flows) | set(in_flows)), dtype=np.int64)
    with atomic_path(out, overwrite=options.get("overwrite", True)) as tmp:
        with open(tmp, "wb", buffering=1 << 20) as fh:
            packets = _descriptors(fh, tracks, word)
            bases: dict[int, int] = {}
            interned: list[list[str]] = []  # keeps each vocabulary alive, so its id() is never reused
            next_base = 0
            for b in R.slices(trace, sel, tracks.selected):
                base = bases.get(id(b.vocab))
                if base is None:
                    base = bases[id(b.vocab)] = next_base
                    interned.append(b.vocab)
                    next_base += len(b.vocab)
                    _intern(fh, b.vocab, base)
                    packets += 1
                special = np.zeros(len(b), dtype=bool)
                if b.ids is not None and len(flow_events):
                    special = np.isin(b.ids, flow_events)
                plain = ~special
                fh.write(encode_slices(b.track[plain] + 1, b.start[plain], b.dur[plain], b.name[plain] + base + 1))
                packets += 2 * int(plain.sum())
                if special.any():
                    packets += _flow_slices(fh, b, np.flatnonzero(special), base, out_flows, in_flows)
            for tr, t, v in R.counters(trace, sel, tracks.selected):
                fh.write(encode_counters(tr + 1, t, v))
                packets += len(t)
            packets += annotation_events.write_perfetto(fh, trace, sel, pb, SEQ_ID, _write_packet)  # annotations.json
    return packets
