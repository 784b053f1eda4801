"""The operator table at one level (layers, ops or kernels): what the GUI's operator tree
shows per row, flat and sorted, for `trnx ops` and scripts.

Every number is a column of `Hierarchy.rows()` (the tree's own), renamed for readers:
`path` (the names from the layer down), `time_ns`, `bytes` (HBM read + write), MFU against each kernel's dtype peak and
BF16-normalised, MBU and roofline % at the row's share of HBM, and `bound`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from explorer.model.analysis.hierarchy import Hierarchy
from simcore.errors import UserError

TABLE_LEVELS = ("layer", "op", "kernel")
# output column <- Hierarchy row column
COLUMNS: dict[str, str] = {
    "level": "level", "name": "name", "node": "node", "chip": "chip", "core": "core", "dtype": "dtype",
    "start_ns": "start_ns", "time_ns": "dur_ns", "share_percent": "share_percent", "flops": "flops",
    "model_flops": "model_flops", "bytes": "hbm_bytes", "tflops": "tflops", "gbps": "gbps",
    "arithmetic_intensity": "arithmetic_intensity", "mfu_percent": "mfu_percent",
    "mfu_bf16_percent": "mfu_bf16_percent", "mbu_percent": "mbu_percent", "roofline_percent": "roofline_percent",
    "bound": "bound",
}
SORTS: dict[str, tuple[str, bool]] = {  # --sort key -> (column, ascending)
    "time": ("time_ns", False), "start": ("start_ns", True), "name": ("name", True), "flops": ("flops", False),
    "bytes": ("bytes", False), "mfu": ("mfu_percent", False), "mbu": ("mbu_percent", False),
    "roofline": ("roofline_percent", True),
}


def operator_table(h: Hierarchy, level: str = "op", sort: str = "time", top: int | None = None) -> pd.DataFrame:
    """Rows of one level with `COLUMNS`, sorted by `sort` (`SORTS`; ties keep time order);
    `top` keeps the first rows. Bad values raise UserError."""
    if level not in TABLE_LEVELS:
        raise UserError(f"--level must be one of {', '.join(TABLE_LEVELS)} (got '{level}').")
    if sort not in SORTS:
        raise UserError(f"--sort must be one of {', '.join(SORTS)} (got '{sort}').")
    if top is not None and top < 1:
        raise UserError(f"--top must be a positive number of rows (got {top}).")
    every = h.rows()
    rows = every[every["level"] == level]
    out = pd.DataFrame({name: rows[src].to_numpy() for name, src in COLUMNS.items()})
    out.insert(2, "path", _paths(every, rows))
    out["start_ns"] = out["start_ns"] - h.trace.span_ns[0]
    column, ascending = SORTS[sort]
    out = out.sort_values([column, "start_ns"], ascending=[ascending, True], kind="stable", na_position="last")
    out = out.reset_index(drop=True)
    return out if top is None else out.head(top)


def _paths(every: pd.DataFrame, rows: pd.DataFrame) -> list[str]:
    """Each row's names below the model, joined by " / " ("layer 3 / mlp.gate_up_proj"): ops of
    different layers share names, their paths do not."""
    name = dict(zip(every["node"], every["name"]))
    parent = dict(zip(every["node"], every["parent"]))
    level = dict(zip(every["node"], every["level"]))
    out = []
    for node in rows["node"]:
        parts = []
        while node and level.get(node) not in (None, "model"):
            parts.append(str(name[node]))
            node = parent.get(node, "")
        out.append(" / ".join(reversed(parts)))
    return out


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """One plain dict per row (NaN -> None), what `trnx ops --json` prints."""
    out = []
    for rec in table.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
                    for k, v in rec.items()})
    return out
