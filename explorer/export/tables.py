"""One trace table to Parquet or CSV, streamed batch by batch.

The export's `Scope` picks rows the way the timeline formats do: chips' partitions are
read alone, rows on tracks out of scope and rows that do not overlap the window are
dropped. A filter a table cannot answer (a window on `flows`) is one sentence, not a no-op.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace.schema import spec

from explorer.export.selection import export_scope
from explorer.model.columns import num
from explorer.model.tracks import Tracks
from explorer.model.scope import Scope


def _table(trace: Trace, options: dict[str, Any]) -> pa.Table:
    name = options.get("table")
    if not name:
        raise UserError("this format exports one table; name it with --table (e.g. --table instructions).")
    spec(name)
    scope = export_scope(trace, options)
    table = trace.table(name, None if scope.chips is None else list(scope.chips))
    return table if scope == Scope() else table.take(_rows_in(trace, name, table, scope))


def _rows_in(trace: Trace, name: str, table: pa.Table, scope: Scope) -> np.ndarray:
    """Indices of the rows of `table` that `scope` keeps."""
    cols = set(table.schema.names)
    n = table.num_rows
    if "track_id" in cols:
        track_ok, track = scope.track_mask(Tracks.of(trace)), num(table, "track_id")
    elif not scope.is_whole:
        raise UserError(f"the {name} table has no track_id, so --chips, --cores and --tracks do not apply to it.")
    else:
        track_ok, track = np.ones(1, dtype=bool), np.zeros(n, dtype=np.int64)
    start_col = next((c for c in ("arrive_ns", "start_ns", "time_ns") if c in cols), None)
    if start_col is None:
        if (scope.t0, scope.t1) != (None, None):
            raise UserError(f"the {name} table has no times, so --range does not apply to it.")
        start = end = np.zeros(n, dtype=np.int64)
    else:
        start = num(table, start_col)
        end = num(table, "end_ns") if "end_ns" in cols else start + num(table, "dur_ns") if "dur_ns" in cols else start
    return scope.rows(track_ok, track, start, end)


def _plain(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Dictionary columns as plain strings (CSV has no dictionaries)."""
    cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def export_parquet(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    table = _table(trace, options)
    with atomic_path(out, overwrite=options.get("overwrite", True)) as tmp:
        with pq.ParquetWriter(str(tmp), table.schema, compression="zstd") as w:
            for batch in table.to_batches(max_chunksize=1 << 20):
                w.write_batch(batch)
    return table.num_rows


def export_csv(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    table = _table(trace, options)
    with atomic_path(out, overwrite=options.get("overwrite", True)) as tmp:
        schema = pa.schema(
            [pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f for f in table.schema]
        )
        with pacsv.CSVWriter(str(tmp), schema) as w:
            for batch in table.to_batches(max_chunksize=1 << 18):
                w.write_batch(_plain(batch))
    return table.num_rows
