"""Regions: the trace's layers, ops and collectives as time ranges, and their metrics side by side.

Neuron Explorer's Region Highlighter: every layer and op of the `ops` table (by its span) and
every collective (first arrival to last finish) is a region; `compare` gives two or three of
them the same metrics -- duration, instructions, FLOPs and achieved TFLOPS, tensor engine busy,
DMA bytes and bandwidth, HBM read and write, collective wait -- each from the area summary
(`explorer.model.timeline.selection.summarize_area`) over every row in the region's range.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from explorer.model import columns
from explorer.model.timeline.selection import area_scope, summarize_area
from explorer.model.timeline.trace_index import TraceIndex
from simcore.errors import UserError

TENSOR_KINDS = ("tensor", "tensor_matrix")
METRICS = ("duration_ns", "instructions", "flops", "achieved_tflops", "tensor_busy_percent", "dma_bytes",
           "dma_gbps", "hbm_read_gbps", "hbm_write_gbps", "collective_wait_ns")


def regions(index: TraceIndex) -> pd.DataFrame:
    """Every region: `region` ("op:ID" / "collective:ID"), level (layer, op, collective), name, t0, t1."""
    ops = index.trace.ops
    rows = []
    if ops.num_rows:
        ids, parent = columns.num(ops, "op_id"), columns.num(ops, "parent_id")
        start, dur = columns.num(ops, "start_ns"), columns.num(ops, "dur_ns")
        level = [str(v) for v in ops.column("level").to_pylist()]
        name = [str(v) for v in ops.column("name").to_pylist()]
        by_id = {int(i): k for k, i in enumerate(ids)}
        for k in range(len(ids)):
            if level[k] not in ("layer", "op"):
                continue
            p = by_id.get(int(parent[k]))
            shown = f"{name[p]} / {name[k]}" if level[k] == "op" and p is not None and level[p] == "layer" else name[k]
            rows.append((f"op:{int(ids[k])}", level[k], shown, int(start[k]), int(start[k] + dur[k])))
    coll = index.trace.collectives
    if coll.num_rows:
        df = pd.DataFrame({"id": columns.num(coll, "collective_id"), "a": columns.num(coll, "arrive_ns"),
                           "e": columns.num(coll, "end_ns"), "kind": [str(v) for v in coll.column("kind").to_pylist()]})
        g = df.groupby("id")
        for cid, a, e, kind in zip(g.size().index, g["a"].min(), g["e"].max(), g["kind"].first()):
            rows.append((f"collective:{int(cid)}", "collective", f"{kind} #{int(cid)}", int(a), int(e)))
    out = pd.DataFrame(rows, columns=["region", "level", "name", "t0", "t1"])
    return out.sort_values(["t0", "level"], kind="stable").reset_index(drop=True)


def metrics(index: TraceIndex, t0: int, t1: int) -> dict[str, float]:
    """The region metrics of [t0, t1) over every row."""
    if t1 <= t0:
        raise UserError("a region needs an end after its start.")
    s = summarize_area(index, area_scope(sorted(index.lanes), t0, t1))
    d = t1 - t0
    tensor = [tid for tid, info in index.tracks.items() if info.kind in TENSOR_KINDS and tid in index.lanes]
    busy = sum(s.busy_ns.get(t, 0) for t in tensor)
    return {
        "duration_ns": float(d), "instructions": float(s.instructions), "flops": float(s.flops),
        "achieved_tflops": s.flops / d / 1e3, "tensor_busy_percent": 100.0 * busy / (d * len(tensor)) if tensor else np.nan,
        "dma_bytes": s.dma_bytes, "dma_gbps": s.dma_gbps,
        "hbm_read_gbps": np.nan if s.hbm_read_gbps is None else s.hbm_read_gbps,
        "hbm_write_gbps": np.nan if s.hbm_write_gbps is None else s.hbm_write_gbps,
        "collective_wait_ns": float(s.collective_wait_ns),
    }


def compare(index: TraceIndex, table: pd.DataFrame, chosen: list[str]) -> pd.DataFrame:
    """Metrics (rows) by region (columns, in the order chosen) for the regions named in `chosen`."""
    out = {}
    for region in chosen:
        hit = table[table["region"] == region]
        if hit.empty:
            raise UserError(f"there is no region {region}.")
        r = hit.iloc[0]
        out[f"{r['name']}"] = metrics(index, int(r["t0"]), int(r["t1"]))
    return pd.DataFrame(out, index=list(METRICS))
