"""Schema and data invariants of trace tables, each failure one sentence.

The checks are vectorised (numpy over whole columns) so validating a
10-million-row table costs a few passes over memory, not a Python loop.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simcore.errors import TraceFormatError
from simcore.trace import schema as S


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return f"dictionary<{t.index_type}, {t.value_type}>"
    return str(t)


def check_schema(file: Path, spec: S.TableSpec, schema: pa.Schema) -> None:
    """Every required column is present with exactly its v1 type (extra columns are allowed)."""
    names = schema.names
    for col in spec.columns:
        if col.name not in names:
            if col.required:
                raise TraceFormatError(f"{file} lacks the required column '{col.name}'.")
            continue
        found = schema.field(col.name).type
        if found != col.type:
            raise TraceFormatError(
                f"{file} column '{col.name}' has type {_type_name(found)}, expected {_type_name(col.type)}."
            )


def _numpy(table: pa.Table, name: str) -> np.ndarray:
    col = table.column(name)
    if col.num_chunks == 1:
        return col.chunk(0).to_numpy()
    return col.to_numpy()


def check_data(file: Path, spec: S.TableSpec, table: pa.Table) -> None:
    """Row-level invariants: no nulls, non-negative durations, sorted starts per track."""
    for col in spec.columns:
        if col.name in table.column_names and table.column(col.name).null_count:
            raise TraceFormatError(f"{file} column '{col.name}' has missing (null) values.")
    if table.num_rows == 0:
        return
    if spec.duration_column is not None:
        dur = table.column(spec.duration_column)
        if pc.min(dur).as_py() < 0:
            row = int(np.argmax(_numpy(table, spec.duration_column) < 0))
            raise TraceFormatError(
                f"{file} has a negative duration at row {row} ({spec.duration_column}={dur[row].as_py()})."
            )
    if spec.name == "collectives":
        _check_collectives(file, table)
    if spec.name == "sbuf_allocations":
        _check_allocations(file, table)
    if spec.track_column is not None and spec.start_column is not None:
        _check_sorted(file, spec, table)


def _check_sorted(file: Path, spec: S.TableSpec, table: pa.Table) -> None:
    """Starts never decrease within a track.

    Rows grouped by track (what writers should produce) are checked chunk by chunk
    with no copy of the columns; other layouts fall back to a stable sort by track.
    """
    tracks = table.column(spec.track_column)
    starts = table.column(spec.start_column)
    if tracks.num_chunks != starts.num_chunks or any(
        len(a) != len(b) for a, b in zip(tracks.chunks, starts.chunks)
    ):
        tracks, starts = tracks.combine_chunks(), starts.combine_chunks()
        tracks, starts = pa.chunked_array([tracks]), pa.chunked_array([starts])
    offset = 0
    prev_track = prev_start = None
    for tc, sc in zip(tracks.chunks, starts.chunks):
        track, start = tc.to_numpy(), sc.to_numpy()
        if len(track) == 0:
            continue
        if prev_track is not None:
            if track[0] < prev_track:
                return _check_sorted_ungrouped(file, spec, table)
            if track[0] == prev_track and start[0] < prev_start:
                _raise_unsorted(file, spec, offset, int(track[0]))
        if (track[1:] < track[:-1]).any():
            return _check_sorted_ungrouped(file, spec, table)
        bad = np.flatnonzero((start[1:] < start[:-1]) & (track[1:] == track[:-1]))
        if len(bad):
            row = int(bad[0] + 1)
            _raise_unsorted(file, spec, offset + row, int(track[row]))
        offset += len(track)
        prev_track, prev_start = track[-1], start[-1]


def _check_sorted_ungrouped(file: Path, spec: S.TableSpec, table: pa.Table) -> None:
    track, start = _numpy(table, spec.track_column), _numpy(table, spec.start_column)
    order = np.argsort(track, kind="stable")
    track, start = track[order], start[order]
    bad = np.flatnonzero((np.diff(track) == 0) & (np.diff(start) < 0))
    if len(bad):
        row = int(bad[0] + 1)
        _raise_unsorted(file, spec, int(order[row]), int(track[row]))


def _raise_unsorted(file: Path, spec: S.TableSpec, row: int, track: int) -> None:
    raise TraceFormatError(
        f"{file} is not sorted: row {row} starts before the previous row of track {track} "
        f"({spec.start_column} must not decrease within a track)."
    )


def _check_collectives(file: Path, table: pa.Table) -> None:
    arrive, start, end, wait = (_numpy(table, c) for c in ("arrive_ns", "start_ns", "end_ns", "wait_ns"))
    for bad, what in (
        (start < arrive, "starts before it arrives"),
        (end < start, "ends before it starts"),
        (wait != start - arrive, "has wait_ns different from start_ns - arrive_ns"),
    ):
        if bad.any():
            raise TraceFormatError(f"{file} row {int(np.argmax(bad))} {what}.")


def _check_allocations(file: Path, table: pa.Table) -> None:
    """An allocation ends no earlier than it starts and spans at least one partition from 0 up."""
    start, end = _numpy(table, "start_ns"), _numpy(table, "end_ns")
    bad = np.flatnonzero((end < start) | (_numpy(table, "partitions") <= 0) | (_numpy(table, "partition_start") < 0)
                         | (_numpy(table, "bytes") < 0) | (_numpy(table, "address") < 0))
    if len(bad):
        raise TraceFormatError(f"{file} has an impossible allocation at row {int(bad[0])} (it ends before it starts, "
                               "or spans no partition, or has a negative address or size).")
