"""What limits a kernel or an op: compute, HBM, DMA latency or a collective.

One vectorised rule, shared by the operator tree, kernel details and recommendations,
so they never disagree. For each row:

1. `collective` if the op is a collective (all-reduce, all-to-all, ...).
2. Roofline times: t_compute = FLOPs / (per-core peak of the dtype x cores) and
   t_hbm = HBM bytes / (HBM bandwidth x chips). If the larger of the two is at least
   half the measured time, the row runs near a roof: `compute` when t_compute >=
   t_hbm, else `hbm`.
3. Otherwise it is far from both roofs, and the question is what the time went to.
   With instruction detail: `dma_latency` when the DMA side (queue busy time, or the
   Sync engine's DmaTrigger issue time when longer) was busier than the busiest compute
   engine (transfers that wait on latency and issue cost, not bandwidth), else
   `compute` (engine issue overhead, vector/scalar work the tensor roof ignores).
   Without it: `dma_latency` when t_hbm > t_compute, else `compute`.
4. `unknown` when neither roof nor detail is known (no hardware keys, no instructions).

An op, layer or the model does not apply the rule to its own span: that span runs over
every rank, so one straggler stretches it, its rates fall far below both roofs and step 3
would call a 0.5%-MFU layer `compute`. It takes instead the bound holding the most of its
kernels' time (`by_kernel_time`), so it says what its kernels say.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BOUNDS = ("compute", "hbm", "dma_latency", "collective", "unknown")
NEAR_ROOF = 0.5  # a row whose roofline time is >= half its measured time is "at" that roof


def classify(
    dur_ns: np.ndarray,
    t_compute_ns: np.ndarray,
    t_hbm_ns: np.ndarray,
    engine_busy_ns: np.ndarray,
    dma_busy_ns: np.ndarray,
    is_collective: np.ndarray,
) -> np.ndarray:
    """Bound label per row (object array). NaN in an input means "not known"."""
    dur = np.asarray(dur_ns, dtype=np.float64)
    tc = np.asarray(t_compute_ns, dtype=np.float64)
    tm = np.asarray(t_hbm_ns, dtype=np.float64)
    eng = np.asarray(engine_busy_ns, dtype=np.float64)
    dma = np.asarray(dma_busy_ns, dtype=np.float64)
    tc0, tm0 = np.nan_to_num(tc), np.nan_to_num(tm)
    roof = np.fmax(tc, tm)
    near = roof >= NEAR_ROOF * dur
    has_detail = ~np.isnan(eng) & ~np.isnan(dma)
    has_roof = ~np.isnan(roof)
    out = np.full(len(dur), "unknown", dtype=object)
    far_detail = has_detail & ~(has_roof & near)
    out[far_detail] = np.where(dma[far_detail] > eng[far_detail], "dma_latency", "compute")
    far_roof = has_roof & ~near & ~has_detail
    out[far_roof] = np.where(tm0[far_roof] > tc0[far_roof], "dma_latency", "compute")
    at_roof = has_roof & near
    out[at_roof] = np.where(tc0[at_roof] >= tm0[at_roof], "compute", "hbm")
    out[np.asarray(is_collective, dtype=bool)] = "collective"
    return out


def by_kernel_time(kernel_bound: np.ndarray, kernel_dur_ns: np.ndarray, item: np.ndarray, row: np.ndarray,
                   n_rows: int) -> np.ndarray:
    """Per row, the kernel bound holding the most of its kernels' time (`unknown` if none is known).

    (item, row) pairs a kernel with every row it counts in. A tie goes to the bound first in
    `BOUNDS`, so the answer never depends on row order.
    """
    out = np.full(n_rows, "unknown", dtype=object)
    frame = pd.DataFrame({"row": np.asarray(row, np.int64),
                          "bound": np.asarray(kernel_bound, dtype=object)[item],
                          "dur": np.asarray(kernel_dur_ns, np.float64)[item]})
    frame = frame[frame["bound"] != "unknown"]
    if frame.empty:
        return out
    sums = frame.groupby(["row", "bound"], sort=False)["dur"].sum().reset_index()
    sums["rank"] = sums["bound"].map({b: i for i, b in enumerate(BOUNDS)})
    best = sums.sort_values(["row", "dur", "rank"], ascending=[True, False, True]).drop_duplicates("row")
    out[best["row"].to_numpy(np.int64)] = best["bound"].to_numpy(dtype=object)
    return out
