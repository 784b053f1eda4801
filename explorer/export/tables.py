"""One trace table to Parquet or CSV, streamed batch by batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace.schema import spec


def _table(trace: Trace, options: dict[str, Any]) -> pa.Table:
    name = options.get("table")
    if not name:
        raise UserError("this format exports one table; name it with --table (e.g. --table instructions).")
    spec(name)
    return trace.table(name, options.get("chips"))


def _plain(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Dictionary columns as plain strings (CSV has no dictionaries)."""
    cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def export_parquet(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    table = _table(trace, options)
    with atomic_path(out) as tmp:
        with pq.ParquetWriter(str(tmp), table.schema, compression="zstd") as w:
            for batch in table.to_batches(max_chunksize=1 << 20):
                w.write_batch(batch)
    return table.num_rows


def export_csv(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    table = _table(trace, options)
    with atomic_path(out) as tmp:
        schema = pa.schema(
            [pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f for f in table.schema]
        )
        with pacsv.CSVWriter(str(tmp), schema) as w:
            for batch in table.to_batches(max_chunksize=1 << 18):
                w.write_batch(_plain(batch))
    return table.num_rows
