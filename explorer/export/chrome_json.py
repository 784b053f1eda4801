"""Export a trace as Chrome Trace Event Format JSON (chrome://tracing, ui.perfetto.dev).

pid = chip, tid = track id (one thread per engine row, named `core N Engine`),
`X` events for instructions, kernels, DMA transfers and collectives, `C` events for
counters, `s`/`f` flow events for dependencies, `M` events for process and thread
names and order. Timestamps are microseconds with nanosecond decimals.

The file is streamed batch by batch: rows are formatted from numpy columns with
names pre-escaped once per dictionary entry, and the whole JSON never exists in
memory. Written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from simcore.atomic import atomic_path
from simcore.trace import Trace
from explorer.export import annotation_events
from explorer.export import timeline_rows as R
from explorer.export.selection import export_scope

_ARGS = {
    "kernels": ("kernel_id", "flops", "hbm_read_bytes", "hbm_write_bytes"),
    "instructions": ("id", "kernel_id", "flops", "bytes"),
    "dma": ("id", "bytes", "kernel_id"),
    "collectives": ("collective_id", "bytes"),
}
_CAT = {"kernels": "kernel", "instructions": "instruction", "dma": "dma", "collectives": "collective"}


def _esc(s: str) -> str:
    return orjson.dumps(s).decode()


def _us(ns: np.ndarray) -> list[str]:
    """Integer ns -> exact decimal microseconds ('1234.567')."""
    if len(ns) and int(ns.min()) < 0:
        return [f"{x / 1000:.3f}" for x in ns.tolist()]
    q, r = np.divmod(ns.astype(np.int64), 1000)
    return [f"{a}.{b:03d}" for a, b in zip(q.tolist(), r.tolist())]


class _Out:
    """Writes events separated by commas, in chunks."""

    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.count = 0

    def write(self, lines: list[str]) -> None:
        if not lines:
            return
        self.fh.write((",\n" if self.count else "") + ",\n".join(lines))
        self.count += len(lines)


def _header(trace: Trace) -> str:
    other = {
        "exporter": "trnx",
        "trace": str(trace.path.name),
        "hardware": trace.hardware.get("name", ""),
        "workload": trace.workload.get("name", ""),
        "source": trace.meta.get("source", "simulator"),
    }
    return '{"displayTimeUnit":"ns","otherData":' + orjson.dumps(other).decode() + ',"traceEvents":[\n'


def _metadata(tracks: R.TrackInfo, process_word: str) -> list[str]:
    lines = []
    for chip in sorted(set(tracks.chip.tolist())):
        lines.append(f'{{"ph":"M","name":"process_name","pid":{chip},"tid":0,"args":{{"name":"{process_word} {chip}"}}}}')
        lines.append(f'{{"ph":"M","name":"process_sort_index","pid":{chip},"tid":0,"args":{{"sort_index":{chip}}}}}')
    for i, tid in enumerate(tracks.ids.tolist()):
        chip = int(tracks.chip[i])
        lines.append(f'{{"ph":"M","name":"thread_name","pid":{chip},"tid":{tid},"args":{{"name":{_esc(tracks.label(i))}}}}}')
        lines.append(f'{{"ph":"M","name":"thread_sort_index","pid":{chip},"tid":{tid},"args":{{"sort_index":{tid}}}}}')
    return lines


def _slice_lines(b: R.SliceBatch, names: list[str], track_chip: np.ndarray) -> list[str]:
    cat = _CAT[b.table]
    keys = _ARGS[b.table]
    arg_tpl = ",".join(f'"{k}":%d' for k in keys)
    cols = [b.args[k].tolist() for k in keys]
    name = [names[c] for c in b.name.tolist()]
    head = (name, track_chip[b.track].tolist(), b.track.tolist())
    if len(b) and (int(b.start.min()) < 0 or int(b.dur.min()) < 0):  # rare: decimal strings, sign and all
        tpl = '{"ph":"X","cat":"' + cat + '","name":%s,"pid":%d,"tid":%d,"ts":%s,"dur":%s,"args":{' + arg_tpl + "}}"
        return [tpl % r for r in zip(*head, _us(b.start), _us(b.dur), *cols)]
    # ns -> us as integer part and three decimals, formatted in the same pass as the row
    sq, sr = np.divmod(b.start, 1000)
    dq, dr = np.divmod(b.dur, 1000)
    tpl = '{"ph":"X","cat":"' + cat + '","name":%s,"pid":%d,"tid":%d,"ts":%d.%03d,"dur":%d.%03d,"args":{' + arg_tpl + "}}"
    return [tpl % r for r in zip(*head, sq.tolist(), sr.tolist(), dq.tolist(), dr.tolist(), *cols)]


def export_chrome_json(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    """Write the selected part of `trace` as Chrome JSON; returns the number of trace events."""
    sel = export_scope(trace, options)
    tracks = R.track_info(trace, sel)
    track_chip = np.zeros(len(tracks.selected), dtype=np.int64)
    track_chip[tracks.ids] = tracks.chip
    label = {int(t): tracks.label(i) for i, t in enumerate(tracks.ids.tolist())}
    word = "rank" if trace.meta.get("source") == "kineto" else "chip"
    with atomic_path(out, overwrite=options.get("overwrite", True)) as tmp:
        with open(tmp, "w", encoding="utf-8", buffering=1 << 20) as fh:
            fh.write(_header(trace))
            w = _Out(fh)
            w.write(_metadata(tracks, word))
            escaped: dict[int, list[str]] = {}
            for b in R.slices(trace, sel, tracks.selected):
                names = escaped.get(id(b.vocab))
                if names is None:
                    names = escaped[id(b.vocab)] = [_esc(v) for v in b.vocab]
                w.write(_slice_lines(b, names, track_chip))
            counter_name = {t: _esc(label[t]) for t in label}
            for tr, t, v in R.counters(trace, sel, tracks.selected):
                w.write([
                    f'{{"ph":"C","name":{counter_name[a]},"pid":{p},"tid":0,"ts":{ts},"args":{{"value":{orjson.dumps(val).decode()}}}}}'
                    for a, p, ts, val in zip(tr.tolist(), track_chip[tr].tolist(), _us(t), v.tolist())
                ])
            f = R.flows(trace, sel, tracks.selected)
            for lo in range(0, len(f), R.BATCH_ROWS):
                sl = slice(lo, lo + R.BATCH_ROWS)
                ids = (np.arange(len(f))[sl] + 1).tolist()
                w.write([
                    f'{{"ph":"s","cat":"flow","name":"dependency","id":{i},"pid":{p},"tid":{tr},"ts":{ts}}}'
                    for i, p, tr, ts in zip(ids, track_chip[f.src_track[sl]].tolist(), f.src_track[sl].tolist(), _us(f.src_start[sl]))
                ])
                w.write([
                    f'{{"ph":"f","bp":"e","cat":"flow","name":"dependency","id":{i},"pid":{p},"tid":{tr},"ts":{ts}}}'
                    for i, p, tr, ts in zip(ids, track_chip[f.dst_track[sl]].tolist(), f.dst_track[sl].tolist(), _us(f.dst_start[sl]))
                ])
            w.write(annotation_events.chrome_lines(trace, sel))  # the user's markers and ranges (annotations.json)
            fh.write("\n]}\n")
    return w.count
