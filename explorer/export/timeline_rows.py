"""A trace as timeline rows for viewers: slices per track, counter samples, flow arrows.

The Chrome-JSON and Perfetto exporters both read this, batch by batch, so what
each table becomes is decided once: instructions, kernels and DMA transfers are
slices on their track; a collective is a `<kind> wait` slice (arrive -> start,
when the rank waited) then a `<kind>` slice (start -> end) on the rank's `cc`
track; counters are samples; flows join the start of their source event to the
start of their destination. Names stay dictionary codes until the writer formats
them, so nothing is built per row before it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from simcore.trace import Trace
from explorer.model.tracks import Tracks
from explorer.model import columns
from explorer.model.scope import Scope

BATCH_ROWS = 1 << 16


@dataclass
class TrackInfo:
    """The selected tracks: display names and the chip each belongs to."""

    ids: np.ndarray
    chip: np.ndarray
    core: np.ndarray
    kind: list[str]
    name: list[str]
    unit: list[str]
    selected: np.ndarray  # mask over track_id

    def label(self, i: int) -> str:
        """`core 0 TensorMatrix`, or the bare name for chip-level rows."""
        core = int(self.core[i])
        return f"core {core} {self.name[i]}" if core >= 0 else self.name[i]


def track_info(trace: Trace, sel: Scope) -> TrackInfo:
    t = trace.tracks
    mask = sel.track_mask(Tracks.of(trace))
    ids = columns.num(t, "track_id")
    keep = mask[ids] if len(mask) else np.zeros(len(ids), dtype=bool)
    order = np.flatnonzero(keep)
    order = order[np.lexsort((ids[order], columns.num(t, "chip")[order]))]
    kinds = t.column("kind").to_pylist()
    names = t.column("name").to_pylist()
    units = t.column("unit").to_pylist()
    return TrackInfo(ids[order], columns.num(t, "chip")[order], columns.num(t, "core")[order],
                     [kinds[i] for i in order], [names[i] for i in order], [units[i] for i in order], mask)


@dataclass
class SliceBatch:
    """Slices of one table: parallel arrays, names as codes into `vocab`."""

    table: str
    track: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    vocab: list[str]
    ids: np.ndarray | None = None
    args: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)


def _batches(table: str, idx: np.ndarray, track, start, dur, name, vocab, ids=None, args=None) -> Iterator[SliceBatch]:
    for lo in range(0, len(idx), BATCH_ROWS):
        sl = idx[lo : lo + BATCH_ROWS]
        yield SliceBatch(table, track[sl], start[sl], dur[sl], name[sl], vocab,
                         None if ids is None else ids[sl], {k: v[sl] for k, v in (args or {}).items()})


def slices(trace: Trace, sel: Scope, track_ok: np.ndarray) -> Iterator[SliceBatch]:
    """Every selected interval, table by table, in batches."""
    k = trace.table("kernels", sel.chips)
    if k.num_rows:
        tr, s, d = columns.num(k, "track_id"), columns.num(k, "start_ns"), columns.num(k, "dur_ns")
        codes, vocab = columns.codes(k.column("name"))
        yield from _batches("kernels", sel.rows(track_ok, tr, s, s + d), tr, s, d, codes, vocab, None,
                            {c: columns.num(k, c) for c in ("kernel_id", "flops", "hbm_read_bytes", "hbm_write_bytes")})
    i = trace.table("instructions", sel.chips)
    if i.num_rows:
        tr, s, d = columns.num(i, "track_id"), columns.num(i, "start_ns"), columns.num(i, "dur_ns")
        codes, vocab = columns.codes(i.column("opcode"))
        ids = columns.num(i, "id")
        yield from _batches("instructions", sel.rows(track_ok, tr, s, s + d), tr, s, d, codes, vocab, ids,
                            {"id": ids, "kernel_id": columns.num(i, "kernel_id"), "flops": columns.num(i, "flops"), "bytes": columns.num(i, "bytes")})
    m = trace.table("dma", sel.chips)
    if m.num_rows:
        tr, s, d = columns.num(m, "track_id"), columns.num(m, "start_ns"), columns.num(m, "dur_ns")
        src, src_v = columns.codes(m.column("src"))
        dst, dst_v = columns.codes(m.column("dst"))
        pair = src.astype(np.int64) * max(len(dst_v), 1) + dst
        vocab = [f"{a or '?'}->{b or '?'}" for a in (src_v or [""]) for b in (dst_v or [""])]
        ids = columns.num(m, "id")
        yield from _batches("dma", sel.rows(track_ok, tr, s, s + d), tr, s, d, pair, vocab, ids,
                            {"id": ids, "bytes": columns.num(m, "bytes"), "kernel_id": columns.num(m, "kernel_id")})
    c = trace.table("collectives", sel.chips)
    if c.num_rows:
        tr, arrive, start, end = (columns.num(c, n) for n in ("track_id", "arrive_ns", "start_ns", "end_ns"))
        kind, kinds = columns.codes(c.column("kind"))
        vocab = kinds + [f"{k} wait" for k in kinds]
        waited = start > arrive
        # a wait slice then a transfer slice per rank, merged in time order per track
        w_idx = np.flatnonzero(waited)
        tr2 = np.concatenate([tr[w_idx], tr])
        s2 = np.concatenate([arrive[w_idx], start])
        d2 = np.concatenate([start[w_idx] - arrive[w_idx], end - start])
        n2 = np.concatenate([kind[w_idx] + len(kinds), kind])
        cid = columns.num(c, "collective_id")
        args = {"collective_id": np.concatenate([cid[w_idx], cid]),
                "bytes": np.concatenate([columns.num(c, "bytes")[w_idx], columns.num(c, "bytes")])}
        order = np.lexsort((s2, tr2))
        tr2, s2, d2, n2 = tr2[order], s2[order], d2[order], n2[order]
        args = {a: v[order] for a, v in args.items()}
        yield from _batches("collectives", sel.rows(track_ok, tr2, s2, s2 + d2), tr2, s2, d2, n2, vocab, None, args)


def counters(trace: Trace, sel: Scope, track_ok: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(track, time, value) batches of the selected counter samples."""
    c = trace.table("counters", sel.chips)
    if not c.num_rows:
        return
    tr, t, v = columns.num(c, "track_id"), columns.num(c, "time_ns"), columns.num(c, "value")
    idx = sel.rows(track_ok, tr, t, t)
    for lo in range(0, len(idx), BATCH_ROWS):
        sl = idx[lo : lo + BATCH_ROWS]
        yield tr[sl], t[sl], v[sl]


@dataclass
class Flows:
    """Flow arrows whose two ends are both exported: source and destination event ids and places."""

    src_id: np.ndarray
    dst_id: np.ndarray
    src_track: np.ndarray
    src_start: np.ndarray
    dst_track: np.ndarray
    dst_start: np.ndarray

    def __len__(self) -> int:
        return len(self.src_id)


def flows(trace: Trace, sel: Scope, track_ok: np.ndarray) -> Flows:
    f = trace.flows
    empty = np.zeros(0, dtype=np.int64)
    if not f.num_rows:
        return Flows(empty, empty, empty, empty, empty, empty)
    ids, track, start, end = [], [], [], []
    for t in (trace.table("instructions", sel.chips), trace.table("dma", sel.chips)):
        if t.num_rows:
            s = columns.num(t, "start_ns")
            ids.append(columns.num(t, "id"))
            track.append(columns.num(t, "track_id"))
            start.append(s)
            end.append(s + columns.num(t, "dur_ns"))
    if not ids:
        return Flows(empty, empty, empty, empty, empty, empty)
    ids_a, track_a, start_a, end_a = (np.concatenate(x) for x in (ids, track, start, end))
    order = np.argsort(ids_a, kind="stable")
    ids_a, track_a, start_a, end_a = ids_a[order], track_a[order], start_a[order], end_a[order]
    ok_event = np.zeros(len(ids_a), dtype=bool)
    ok_event[sel.rows(track_ok, track_a, start_a, end_a)] = True

    def find(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.clip(np.searchsorted(ids_a, x), 0, len(ids_a) - 1)
        return pos, (ids_a[pos] == x) & ok_event[pos]

    src, dst = columns.num(f, "src_id"), columns.num(f, "dst_id")
    ps, oks = find(src)
    pd_, okd = find(dst)
    keep = oks & okd
    return Flows(src[keep], dst[keep], track_a[ps[keep]], start_a[ps[keep]], track_a[pd_[keep]], start_a[pd_[keep]])
