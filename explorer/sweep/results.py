"""results.parquet: one row per configuration, rewritten atomically after every finished row.

Columns, in order: `config` (the configuration's index in grid order), one column per grid
key (named as the capture option, typed by its kind), `status` (ok, refused, failed),
`reason` (one sentence, for refused and failed rows), the metrics below (explorer.model's:
the numbers `trnx summary` gives for the configuration's trace), `trace` (the kept trace,
relative to the sweep directory) and `key` (the grid values as JSON: what `--resume`
matches). Rows are sorted by `config`, so a sweep writes the same file whatever order its
workers finish in. The spec (fixed options and grid) is in the schema metadata too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from explorer.model.analysis.metrics import METRIC_BY_NAME, MetricSpec
from explorer.model.analysis.step import STEP_METRIC_BY_NAME
from explorer.sweep.grid import Axis
from simcore.atomic import atomic_path
from simcore.errors import UserError

RESULTS_FILE = "results.parquet"
OK, REFUSED, FAILED = "ok", "refused", "failed"
FINISHED = (OK, REFUSED)   # --resume runs failed rows again (a worker may have died)

_SPECS = {**METRIC_BY_NAME, **STEP_METRIC_BY_NAME}
METRICS: tuple[MetricSpec, ...] = tuple(_SPECS[n] for n in (
    "step_time_ns", "tokens_per_s", "tokens_per_s_per_chip", "mfu_estimated_percent", "mbu_estimated_percent",
    "cc_op_active_time_percent", "hbm_bytes_per_chip", "hbm_capacity_bytes_per_chip", "fits", "chips_used",
    "tokens_per_step",
))
METRIC_BY_COLUMN: dict[str, MetricSpec] = {m.name: m for m in METRICS}
SUMMARY_METRICS = ("mfu_estimated_percent", "mbu_estimated_percent", "cc_op_active_time_percent")


def _metric_type(spec: MetricSpec) -> pa.DataType:
    if spec.unit == "yes/no":
        return pa.bool_()
    if spec.unit in ("count", "bytes"):
        return pa.int64()
    return pa.float64()


_KIND_TYPES = {"int": pa.int64(), "float": pa.float64(), "flag": pa.bool_(), "switch": pa.bool_()}


def schema(axes: Iterable[Axis], spec_json: Mapping[str, Any] | None = None) -> pa.Schema:
    fields = [pa.field("config", pa.int32(), nullable=False)]
    fields += [pa.field(a.name, _KIND_TYPES.get(a.option.kind, pa.string())) for a in axes]
    fields += [pa.field("status", pa.string(), nullable=False), pa.field("reason", pa.string())]
    fields += [pa.field(m.name, _metric_type(m)) for m in METRICS]
    fields += [pa.field("trace", pa.string()), pa.field("key", pa.string(), nullable=False)]
    meta = {b"trnx.sweep": json.dumps(spec_json, sort_keys=True).encode()} if spec_json is not None else None
    return pa.schema(fields, metadata=meta)


def grid_cell(value: Any) -> Any:
    """A grid value as its column holds it (a repeated option's list as text joined by ';')."""
    return ";".join(map(str, value)) if isinstance(value, (list, tuple)) else value


def write_results(path: Path, rows: Iterable[Mapping[str, Any]], axes: list[Axis],
                  spec_json: Mapping[str, Any] | None = None) -> None:
    """Write every row (sorted by config) to `path` atomically: a reader or a kill sees the old
    file or the new one, never half of one."""
    import pyarrow.parquet as pq

    sch = schema(axes, spec_json)
    ordered = sorted(rows, key=lambda r: r["config"])
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in sch} for r in ordered], schema=sch)
    with atomic_path(path, overwrite=True) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an existing results.parquet (for --resume), or one sentence if unreadable."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise UserError(f"cannot read {path} ({str(exc).splitlines()[0].rstrip('.')}); move it away to start "
                        "the sweep afresh.") from None
    missing = {"config", "key", "status"} - set(table.column_names)
    if missing:
        raise UserError(f"{path} is not a trnx sweep result (no column {sorted(missing)[0]}).")
    return table.to_pylist()
