"""Where a step's wall time goes on its critical path: compute, HBM, DMA latency, collectives, collective
waits, runtime overheads and idle time, summing to the step time.

The critical path runs through the chip everyone waits for: the chip that waited least at collectives
(on one chip, that chip). Its timeline from the trace's start to its end is cut into pieces, each given
to the first of these that covers it:
1. `runtime`: the runtime's work on the chip's `Runtime` rows (step start, barriers between ops, kernel
   launches; simcore.timing.runtime);
2. a kernel's bound (`compute`, `hbm`, `dma_latency`, `unknown`): each op's window on the chip (its first
   kernel's start to its last kernel's end) counts as the bound of the op's longest kernel -- the core the
   op waits for -- as `analysis/bound.py` classifies it (the operator tree's rule);
3. `collective_wait`: a collective's wait for the last rank to arrive (arrive -> start);
4. `collective`: a collective's transfer (start -> end) that no kernel overlaps (an asynchronous one under
   compute is not on the path);
5. `idle`: nothing of the above.
So the parts are a partition of the step and sum to it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from explorer.model.analysis.bound import BOUNDS
from simcore.trace import Trace

CATEGORIES = ("runtime", "compute", "hbm", "dma_latency", "unknown", "collective_wait", "collective", "idle")
LABELS = {"runtime": "launch and runtime overheads", "compute": "compute (engines)", "hbm": "HBM bandwidth",
          "dma_latency": "DMA latency and issue", "unknown": "kernels of unknown bound",
          "collective_wait": "waiting for other ranks", "collective": "collectives (transfer)", "idle": "idle"}
_KERNEL_BOUNDS = tuple(b for b in BOUNDS if b != "collective")


@dataclass
class StepBreakdown:
    """The critical chip's step time split by category (ns), in CATEGORIES order."""

    chip: int
    t0: float
    t1: float
    ns: dict[str, float] = field(default_factory=dict)

    @property
    def step_ns(self) -> float:
        return self.t1 - self.t0

    def to_dict(self) -> dict[str, Any]:
        step = self.step_ns
        return {"chip": self.chip, "step_time_ns": step,
                "parts": [{"category": c, "label": LABELS[c], "ns": self.ns.get(c, 0.0),
                           "percent": 100.0 * self.ns.get(c, 0.0) / step if step > 0 else 0.0} for c in CATEGORIES]}


def shown_part(part: dict[str, Any]) -> bool:
    """Whether a part is worth a line (trnx summary and the Summary panel leave out rounding crumbs)."""
    return part["percent"] >= 0.05


def breakdown_line(part: dict[str, Any]) -> str:
    """One part as the Summary panel shows it: label, time, share of the step."""
    from explorer.model.units import format_ns

    return f"{part['label']}: {format_ns(part['ns'])} ({part['percent']:.1f}%)"


def _critical_chip(trace: Trace) -> int:
    chips = int(trace.hardware.get("chips", 1) or 1)
    if chips <= 1 or "collectives" not in trace.table_names:
        return 0
    cc = trace.table("collectives")
    if cc.num_rows == 0:
        return 0
    chip = cc["chip"].to_numpy()
    wait = np.bincount(chip, weights=cc["wait_ns"].to_numpy().astype(np.float64), minlength=chips)
    return int(np.argmin(wait))


def _runtime_intervals(trace: Trace, chip: int) -> tuple[np.ndarray, np.ndarray]:
    tracks = trace.table("tracks")
    ids = pc.filter(tracks["track_id"], pc.and_(pc.equal(tracks["kind"], "runtime"), pc.equal(tracks["chip"], chip)))
    if len(ids) == 0 or "instructions" not in trace.table_names:
        return np.zeros(0), np.zeros(0)
    ins = trace.table("instructions", chips=[chip])
    rows = ins.filter(pc.is_in(ins["track_id"], ids))
    a = rows["start_ns"].to_numpy().astype(np.float64)
    return a, a + rows["dur_ns"].to_numpy()


def _op_windows(trace: Trace, chip: int, bound_of_kernel: dict[int, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, bound) of each op's window on the chip, bound = its longest kernel's."""
    k = trace.table("kernels", chips=[chip])
    k = k.filter(pc.equal(k["chip"], chip))
    if k.num_rows == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, object)
    op = k["op_id"].to_numpy()
    start = k["start_ns"].to_numpy().astype(np.float64)
    end = start + k["dur_ns"].to_numpy()
    kid = k["kernel_id"].to_numpy()
    order = np.lexsort((-(end - start), op))           # per op, its longest kernel first
    op_s, first = np.unique(op[order], return_index=True)
    lo = np.minimum.reduceat(start[order], first)
    hi = np.maximum.reduceat(end[order], first)
    bound = np.array([bound_of_kernel.get(int(i), "unknown") for i in kid[order][first]], dtype=object)
    return lo, hi, bound


def step_breakdown(trace: Trace, kernels: pd.DataFrame) -> StepBreakdown:
    """The critical chip's step split by category; `kernels` has each kernel's `kernel_id`, `chip` and
    `bound` (the operator tree's `Hierarchy.kernels`)."""
    t0, t1 = (float(x) for x in trace.span_ns)
    chip = _critical_chip(trace)
    mine = kernels[kernels["chip"] == chip]
    kernel_bounds = dict(zip(mine["kernel_id"].astype(np.int64).tolist(), mine["bound"].astype(str).tolist()))
    labelled: list[tuple[str, np.ndarray, np.ndarray]] = [("runtime", *_runtime_intervals(trace, chip))]
    lo, hi, bound = _op_windows(trace, chip, kernel_bounds)
    for b in _KERNEL_BOUNDS:
        m = bound == b
        labelled.append((b, lo[m], hi[m]))
    if "collectives" in trace.table_names:
        cc = trace.table("collectives")
        cc = cc.filter(pc.equal(cc["chip"], chip))
        arrive, start, end = (cc[c].to_numpy().astype(np.float64) for c in ("arrive_ns", "start_ns", "end_ns"))
        labelled += [("collective_wait", arrive, start), ("collective", start, end)]
    edges = [np.array([t0, t1])] + [np.clip(np.concatenate([a, b]), t0, t1) for _, a, b in labelled]
    bp = np.unique(np.concatenate(edges))
    seg = np.diff(bp)
    taken = np.zeros(len(seg), bool)
    ns = dict.fromkeys(CATEGORIES, 0.0)
    for cat, a, b in labelled:
        if not len(a):
            continue
        cover = np.zeros(len(bp), np.int64)
        i, j = np.searchsorted(bp, np.clip(a, t0, t1)), np.searchsorted(bp, np.clip(b, t0, t1))
        np.add.at(cover, i, 1)
        np.add.at(cover, j, -1)
        mine = (np.cumsum(cover)[:-1] > 0) & ~taken
        ns[cat] += float(seg[mine].sum())
        taken |= mine
    ns["idle"] = float(seg[~taken].sum())
    return StepBreakdown(chip, t0, t1, ns)
