"""Cross-table and meta.json checks: what a trace must satisfy for every analysis to be safe.

The per-file checks (validate.py) see one table at a time. These see the trace: ids
that refer to tracks, chips and cores the trace has, times that fit the int64 time
line, counts that cannot be negative and the hardware figures analyses divide by. They
run in `Trace.validate()`, so `trnx validate`, `open_trace` and every analysis agree:
a trace that validates summarises, exports and opens in the GUI.

Each check is one or two vectorised passes per column (min/max), so a 10-million-row
trace pays milliseconds, and nothing is sized by an id read from the file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simcore.errors import TraceFormatError
from simcore.trace import schema as S

MAX_ABS_TIME_NS = 1 << 61
"""Every time (a start, an end, a sample) lies within 2^61 ns (about 73 years) either side of
the trace's zero: a sum or difference of two times then never overflows int64."""
TIME_RANGE = "-2^61..2^61 ns"

MAX_CHIPS = 1 << 20
MAX_CORES_PER_CHIP = 1 << 12
"""Bounds on the hardware's chip and core counts in meta.json (a real system has tens of
thousands of chips and tens of cores per chip)."""

# Columns that count something (FLOPs, bytes, members) and so cannot be negative.
NON_NEGATIVE = {
    "instructions": ("flops", "bytes"),
    "dma": ("bytes", "partitions"),
    "kernels": ("flops", "model_flops", "hbm_read_bytes", "hbm_write_bytes"),
    "collectives": ("bytes", "group_size", "rank"),
    "sbuf_allocations": ("partition_start", "partitions", "address", "bytes"),
}
# Time columns (start, sample or end) per table; ends are checked as start + duration too.
TIMES = {
    "instructions": ("start_ns",),
    "dma": ("start_ns",),
    "kernels": ("start_ns",),
    "ops": ("start_ns",),
    "collectives": ("arrive_ns", "start_ns", "end_ns"),
    "counters": ("time_ns",),
    "sbuf_allocations": ("start_ns", "end_ns"),
}
DURATIONS = {"instructions": "dur_ns", "dma": "dur_ns", "kernels": "dur_ns", "ops": "dur_ns"}
TRACK_TABLES = ("instructions", "dma", "kernels", "collectives", "counters")
# hardware keys analyses divide by or size arrays with (docs/trace-format.md): (dotted key, kind)
HARDWARE_KEYS = (
    ("chips", "count"), ("cores_per_chip", "count"),
    ("tensor.rows", "positive"), ("tensor.cols", "positive"), ("tensor.clock_ghz", "positive"),
    ("tensor.peak_tflops", "positive-by-dtype"), ("tensor.bf16_flop_weight", "non-negative-by-dtype"),
    ("hbm.capacity_bytes", "positive"), ("hbm.bandwidth_gbps", "positive"), ("link.bandwidth_gbps", "positive"),
)


def _meta_file(path: Path) -> Path:
    return path / S.META_FILE


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_span(path: Path, span: Any) -> None:
    """span_ns is [start, end], start <= end, both within TIME_RANGE."""
    lo, hi = span
    if not (-MAX_ABS_TIME_NS <= lo <= hi <= MAX_ABS_TIME_NS):
        raise TraceFormatError(
            f"{_meta_file(path)} has span_ns [{lo}, {hi}]; it must be [start, end] with start <= end, both in {TIME_RANGE}."
        )


def check_hardware(path: Path, hardware: Any) -> None:
    """The hardware keys analyses rely on, where present, hold the kind of value they need."""
    if hardware is None:
        return
    if not isinstance(hardware, dict):
        raise TraceFormatError(f"{_meta_file(path)} has a 'hardware' that is not an object.")
    for dotted, kind in HARDWARE_KEYS:
        node: Any = hardware
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        where = f"{_meta_file(path)} hardware.{dotted}"
        if kind == "count":
            top = MAX_CHIPS if dotted == "chips" else MAX_CORES_PER_CHIP
            if not (isinstance(node, int) and not isinstance(node, bool) and 1 <= node <= top):
                raise TraceFormatError(f"{where} must be a whole number from 1 to {top:,} (found {_show(node)}).")
        elif kind == "positive":
            if not (_is_number(node) and node > 0):
                raise TraceFormatError(f"{where} must be a positive number (found {_show(node)}).")
        else:
            least = "positive" if kind.startswith("positive") else "non-negative"
            ok = isinstance(node, dict) and all(
                _is_number(v) and (v > 0 if least == "positive" else v >= 0) for v in node.values()
            )
            if not ok:
                raise TraceFormatError(f"{where} must map each dtype to a {least} number (found {_show(node)}).")


def _min_max(column: pa.ChunkedArray) -> tuple[int, int] | None:
    """Smallest and largest value of a column (one compute call over all its chunks)."""
    if len(column) == 0:
        return None
    mm = pc.min_max(column)
    return int(mm["min"].as_py()), int(mm["max"].as_py())


def _first_row(table: pa.Table, column: str, bad: Any) -> int:
    """Row of the first value the predicate `bad(numpy chunk)` flags (the error message's row)."""
    offset = 0
    for c in table.column(column).chunks:
        hits = np.flatnonzero(bad(c.to_numpy(zero_copy_only=False)))
        if len(hits):
            return offset + int(hits[0])
        offset += len(c)
    return -1


def _where(path: Path, table: str) -> str:
    return f"{path} table '{table}'"


def check_tracks(path: Path, tracks: pa.Table, hardware: dict[str, Any]) -> int:
    """track ids are 0..n-1, each once; chips and cores are within the hardware. Returns n."""
    n = tracks.num_rows
    ids = tracks.column("track_id").to_numpy()
    if n:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise TraceFormatError(
                f"{_where(path, 'tracks')} has track_id {bad}; track ids must number the {n:,} tracks 0..{n - 1}."
            )
        seen = np.bincount(ids, minlength=n)
        if (seen > 1).any():
            raise TraceFormatError(f"{_where(path, 'tracks')} lists track_id {int(np.argmax(seen > 1))} twice.")
    _check_chip_core(path, "tracks", tracks, hardware)
    return n


def _check_chip_core(path: Path, name: str, table: pa.Table, hardware: dict[str, Any]) -> None:
    chips = hardware.get("chips") if isinstance(hardware.get("chips"), int) else None
    cores = hardware.get("cores_per_chip") if isinstance(hardware.get("cores_per_chip"), int) else None
    for column, least, top, noun in (("chip", 0, chips, "chip"), ("core", -1, cores, "core")):
        if column not in table.column_names:
            continue
        mm = _min_max(table.column(column))
        if mm is None:
            continue
        lo, hi = mm
        if lo < least:
            raise TraceFormatError(f"{_where(path, name)} has {column} {lo}; a {column} is {least} or more.")
        if top is not None and hi >= top:
            raise TraceFormatError(
                f"{_where(path, name)} has {column} {hi}, but meta.json's hardware has {top:,} {noun}{'' if top == 1 else 's'}"
                f"{' per chip' if column == 'core' else ''} ({column}s 0..{top - 1})."
            )


def check_rows(path: Path, name: str, table: pa.Table, n_tracks: int, hardware: dict[str, Any]) -> None:
    """One table's ids, times and counts against the trace."""
    if table.num_rows == 0:
        return
    if name in TRACK_TABLES:
        lo, hi = _min_max(table.column("track_id")) or (0, 0)
        if lo < 0 or hi >= n_tracks:
            bad = lo if lo < 0 else hi
            raise TraceFormatError(
                f"{_where(path, name)} refers to track {bad}, which the tracks table lacks (it has tracks 0..{n_tracks - 1})."
            )
    if name in ("kernels", "collectives", "sbuf_allocations"):
        _check_chip_core(path, name, table, hardware)
    for column in NON_NEGATIVE.get(name, ()):
        lo, _ = _min_max(table.column(column)) or (0, 0)
        if lo < 0:
            row = _first_row(table, column, lambda a: a < 0)
            raise TraceFormatError(f"{_where(path, name)} has a negative {column} at row {row} ({lo}).")
    highest = {}
    for column in TIMES.get(name, ()):
        lo, hi = _min_max(table.column(column)) or (0, 0)
        if lo < -MAX_ABS_TIME_NS or hi > MAX_ABS_TIME_NS:
            bad = lo if lo < -MAX_ABS_TIME_NS else hi
            raise TraceFormatError(f"{_where(path, name)} has {column} {bad}, outside {TIME_RANGE}.")
        highest[column] = hi
    dur = DURATIONS.get(name)
    if dur is not None:
        start = TIMES[name][0]
        _, dur_hi = _min_max(table.column(dur)) or (0, 0)
        if dur_hi > 2 * MAX_ABS_TIME_NS or (
            highest[start] + dur_hi > MAX_ABS_TIME_NS  # the usual case stops here: no pass over start + dur
            and _max_end(table.column(start), table.column(dur)) > MAX_ABS_TIME_NS
        ):
            raise TraceFormatError(
                f"{_where(path, name)} row {_end_row(table, start, dur)} ends after 2^61 ns ({start} + {dur} too large)."
            )


def _max_end(start: pa.ChunkedArray, dur: pa.ChunkedArray) -> int:
    """Largest start + duration (start within TIME_RANGE, duration at most 2^62: the sum fits int64)."""
    if [len(c) for c in start.chunks] != [len(c) for c in dur.chunks]:
        start, dur = pa.chunked_array([start.combine_chunks()]), pa.chunked_array([dur.combine_chunks()])
    top = 0
    for s, d in zip(start.chunks, dur.chunks):
        if len(s):
            try:
                top = max(top, int(pc.max(pc.add_checked(s, d)).as_py()))
            except pa.ArrowInvalid:  # cannot happen within the bounds above; refuse rather than wrap
                return MAX_ABS_TIME_NS + 1
    return top


def _end_row(table: pa.Table, start: str, dur: str) -> int:
    s = table.column(start).to_numpy()
    d = table.column(dur).to_numpy()
    hits = np.flatnonzero((d > 2 * MAX_ABS_TIME_NS) | (s > MAX_ABS_TIME_NS - np.minimum(d, 2 * MAX_ABS_TIME_NS)))
    return int(hits[0]) if len(hits) else -1


def check_trace(path: Path, meta: dict[str, Any], table: Any, rows_checked: tuple[str, ...] = ()) -> None:
    """Every cross-table check; `table(name)` gives a validated table. The tables in
    `rows_checked` were checked batch by batch as they were written (`check_rows_of`)."""
    hardware = meta.get("hardware")
    check_hardware(path, hardware)
    hardware = hardware if isinstance(hardware, dict) else {}
    n_tracks = check_tracks(path, table("tracks"), hardware)
    for name in S.TABLES:
        if name != "tracks" and name not in rows_checked:
            check_rows(path, name, table(name), n_tracks, hardware)


ROWS_CHECKED_ALONE = ("instructions", "dma", "flows")
"""Tables whose rows `check_rows_of` can check one batch at a time: their checks need neither
meta.json's hardware nor another table but the number of tracks (flows not even that)."""


def check_rows_of(path: Path, name: str, batch: pa.Table, n_tracks: int) -> None:
    """The checks `Trace.validate` runs on a table's rows, on one batch of them (one of
    ROWS_CHECKED_ALONE): the file's data invariants and this module's ids, times and counts.
    Across batches only the order of starts within a track is left to the caller."""
    from simcore.trace import validate as V

    if name not in ROWS_CHECKED_ALONE:
        raise ValueError(f"{name} rows are not checked alone")
    V.check_data(path, S.spec(name), batch)
    check_rows(path, name, batch, n_tracks, {})
