"""Write the operator table, a summary, an area selection or any analysis table to CSV, atomically.

The GUI's "Export CSV" actions and scripts call these; files go through
`simcore.atomic.atomic_path`, so a failed export never leaves a half-written file.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.intervals import overlaps
from explorer.model.analysis.metrics import METRIC_BY_NAME
from explorer.model.columns import codes, num
from explorer.model.tracks import Tracks
from explorer.model.analysis.summary import Summary
from explorer.model.table_chunks import batches, take_rows
from simcore.atomic import atomic_path
from simcore.trace import Trace


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Any DataFrame (an operator table, a selection's events, diff rows) to CSV."""
    path = Path(path)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return path


def write_operator_table(hierarchy: Hierarchy, path: str | os.PathLike[str],
                         levels: tuple[str, ...] = ("model", "layer", "op", "kernel")) -> Path:
    """The operator table (`Hierarchy.rows(levels)`) to CSV, parents before children."""
    return write_csv(hierarchy.rows(levels), path)


def write_summary(summary: Summary, path: str | os.PathLike[str]) -> Path:
    """One row per metric: name, value (empty when unavailable), unit, group, why unavailable."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "value", "unit", "group", "unavailable"])
        for name, value in summary.metrics.items():
            spec = METRIC_BY_NAME[name]
            w.writerow([name, "" if value is None else value, spec.unit, spec.group, summary.unavailable.get(name, "")])
    return path


AREA_COLUMNS = ("table", "id", "track_id", "track", "chip", "core", "name", "start_ns", "end_ns", "dur_ns",
                "kernel_id", "flops", "bytes")


def area_events(trace: Trace, track_ids: Iterable[int], t0: int, t1: int) -> pd.DataFrame:
    """Every event on `track_ids` that overlaps [t0, t1): instructions, DMA transfers, kernels and
    collective rank-rows (arrive -> end), one row each with `AREA_COLUMNS`, in time order.

    What "export the selection" writes: an area selection of the timeline as rows.
    A zero-length event counts when t0 <= start < t1 (as in the summary's counts).
    """
    tracks = Tracks.of(trace)
    wanted = np.zeros(len(tracks), bool)
    ids = np.asarray(list(track_ids), dtype=np.int64)
    wanted[ids[(ids >= 0) & (ids < len(tracks))]] = True
    parts = []
    specs = (  # table, id column, start column, end from (column, is duration), name column, kernel column
        ("instructions", "id", "start_ns", ("dur_ns", True), "opcode", "kernel_id"),
        ("dma", "id", "start_ns", ("dur_ns", True), None, "kernel_id"),
        ("kernels", "kernel_id", "start_ns", ("dur_ns", True), "name", "kernel_id"),
        ("collectives", "collective_id", "arrive_ns", ("end_ns", False), "kind", None),
    )
    for table, id_col, start_col, (end_col, is_dur), name_col, kernel_col in specs:
        t = trace.table(table)
        if not t.num_rows:
            continue
        # the rows inside, found batch by batch; then only they are read (no whole-column copies)
        found = []
        for offset, c, _ in batches(t, ("track_id", start_col, end_col)):
            tid = c["track_id"].astype(np.int64)
            start = c[start_col]
            end = start + c[end_col] if is_dur else c[end_col]
            inside = np.zeros(len(tid), bool)
            known = tid < len(tracks)
            inside[known] = wanted[tid[known]]
            inside &= overlaps(start, end, t0, t1)
            found.append(np.flatnonzero(inside) + offset)
        rows = np.concatenate(found) if found else np.zeros(0, np.int64)
        if not len(rows):
            continue
        sub = take_rows(t, rows)
        start = num(sub, start_col)
        end = start + num(sub, end_col) if is_dur else num(sub, end_col)
        if name_col is not None:
            c, vocab = codes(sub, name_col)
            name = np.asarray(vocab, dtype=object)[c]
        else:
            sc, sv = codes(sub, "src")
            dc, dv = codes(sub, "dst")
            name = "DMA " + np.asarray(sv, dtype=object)[sc] + "->" + np.asarray(dv, dtype=object)[dc]
        zeros = np.zeros(len(rows), np.int64)
        tr = num(sub, "track_id").astype(np.int64)
        parts.append(pd.DataFrame({
            "table": table, "id": num(sub, id_col), "track_id": tr, "track": tracks.name[tr],
            "chip": tracks.chip[tr], "core": tracks.core[tr], "name": name,
            "start_ns": start, "end_ns": end, "dur_ns": end - start,
            "kernel_id": num(sub, kernel_col) if kernel_col else zeros - 1,
            "flops": num(sub, "flops") if "flops" in t.column_names else zeros,
            "bytes": num(sub, "bytes") if "bytes" in t.column_names else zeros,
        }))
    if not parts:
        return pd.DataFrame(columns=list(AREA_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["start_ns", "track_id"], kind="stable").reset_index(drop=True)[list(AREA_COLUMNS)]
