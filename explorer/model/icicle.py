"""The icicle (flame) view's numbers: model -> layer -> op -> kernel, sized by time or any kernel column.

Kernels are folded by name under their op (the same kernel on every core is one box), ops
under their layer and layers under the model, each box's value the sum of its kernels'
`value` column (`dur_ns`, i.e. kernel time summed over cores, or `flops`, `model_flops`,
`hbm_read_bytes`, `hbm_write_bytes`). Boxes are laid out in time order (children by first
start) as fractions [x0, x1) of the whole, one row per depth; each keeps its time span
[t0, t1) so a click can zoom the timeline to it. Kernels without an op hang off the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from explorer.model import columns
from simcore.errors import UserError
from simcore.trace import Trace

VALUES = ("dur_ns", "flops", "model_flops", "hbm_read_bytes", "hbm_write_bytes")


@dataclass(frozen=True)
class Box:
    depth: int  # 0 model, 1 layer, 2 op, 3 kernel
    name: str
    node: str  # "op:ID" for model/layer/op boxes, "kernel:NAME@op:ID" for folded kernels
    value: float
    x0: float
    x1: float
    t0: int
    t1: int

    @property
    def share(self) -> float:
        """The box's part of the whole model's value (its width: the model box is 0..1)."""
        return self.x1 - self.x0


def _frame(trace: Trace, value: str) -> pd.DataFrame:
    k = trace.kernels
    if value not in VALUES:
        raise UserError(f"the icicle sizes boxes by {', '.join(VALUES)}, not '{value}'.")
    df = pd.DataFrame({"op_id": columns.num(k, "op_id"), "name": [str(v) for v in k.column("name").to_pylist()],
                       "start": columns.num(k, "start_ns"), "dur": columns.num(k, "dur_ns"),
                       "value": columns.num(k, value).astype(np.float64)})
    df["end"] = df["start"] + df["dur"]
    return df


def why_empty(trace: Trace, value: str) -> str:
    """The one sentence to show when `icicle(trace, value)` has no boxes."""
    if trace.kernels.num_rows == 0:
        return "this trace has no kernels: the icicle has nothing to show."
    return f"every kernel's {value} is 0: nothing to size the boxes by; choose another column."


def icicle(trace: Trace, value: str = "dur_ns") -> list[Box]:
    """The boxes of every depth (depth-first, in time order)."""
    df = _frame(trace, value)
    ops = trace.ops
    op_ids = columns.num(ops, "op_id")
    parent = dict(zip(op_ids.tolist(), columns.num(ops, "parent_id").tolist()))
    level = dict(zip(op_ids.tolist(), [str(v) for v in ops.column("level").to_pylist()]))
    oname = dict(zip(op_ids.tolist(), [str(v) for v in ops.column("name").to_pylist()]))
    root = next((i for i in op_ids.tolist() if level.get(i) == "model"), None)

    def chain(op: int) -> tuple[int, int]:
        """(layer id or -1, op id or -1) of a kernel's op."""
        if op < 0 or op not in level:
            return -1, -1
        if level[op] == "layer":
            return op, -1
        p = parent.get(op, -1)
        return (p if level.get(p) == "layer" else -1), op

    pairs = {op: chain(op) for op in set(df["op_id"].tolist())}
    df["layer"] = df["op_id"].map(lambda o: pairs[o][0])
    df["op"] = df["op_id"].map(lambda o: pairs[o][1])
    total = float(df["value"].sum())
    out: list[Box] = []
    if total <= 0 or df.empty:
        return out
    name = oname.get(root, "model") if root is not None else "model"
    out.append(Box(0, name, f"op:{root}" if root is not None else "", total, 0.0, 1.0, int(df["start"].min()), int(df["end"].max())))

    # aggregate once per depth (kernels by name within an op, ops, layers), then lay out the few
    # hundred aggregated rows: no per-box pass over the kernels
    spec = {"v": ("value", "sum"), "s": ("start", "min"), "e": ("end", "max")}
    k3 = df.groupby(["layer", "op", "name"], sort=False).agg(**spec).reset_index()
    k2 = k3.groupby(["layer", "op"], sort=False).agg(v=("v", "sum"), s=("s", "min"), e=("e", "max")).reset_index()
    k1 = k2.groupby("layer", sort=False).agg(v=("v", "sum"), s=("s", "min"), e=("e", "max")).reset_index()
    ops_of = {ly: g.sort_values("s", kind="stable") for ly, g in k2.groupby("layer", sort=False)}
    kernels_of = {key: g.sort_values("s", kind="stable") for key, g in k3.groupby(["layer", "op"], sort=False)}

    def place(depth: int, rows: pd.DataFrame, x: float, label, node, children) -> None:
        for r in rows.itertuples(index=False):
            w = float(r.v) / total
            if w <= 0:
                continue
            out.append(Box(depth, label(r), node(r), float(r.v), x, x + w, int(r.s), int(r.e)))
            if children is not None:
                children(r, x)
            x += w

    def kernels(r, x: float) -> None:
        place(3, kernels_of[(r.layer, r.op)], x, lambda k: k.name, lambda k, op=r.op: f"kernel:{k.name}@op:{op}", None)

    def ops_in(r, x: float) -> None:
        place(2, ops_of[r.layer], x, lambda o: oname.get(o.op, "(no op)") if o.op >= 0 else "(no op)",
              lambda o: f"op:{o.op}" if o.op >= 0 else "", kernels)

    place(1, k1.sort_values("s", kind="stable"), 0.0,
          lambda ly: oname.get(ly.layer, "(outside layers)") if ly.layer >= 0 else "(outside layers)",
          lambda ly: f"op:{ly.layer}" if ly.layer >= 0 else "", ops_in)
    return out
