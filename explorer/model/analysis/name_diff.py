"""Hold a simulated trace against a measured one: layers, ops and kernels aligned by name.

A measured profile (an imported Neuron Explorer or PyTorch profile) and a simulation of the
same model rarely have the same hierarchy shape - different op counts, fused or split
kernels, other occurrence orders - so matching by position (explorer.model.analysis.diff) pairs the
wrong rows. Here each level is grouped by name: per (level, name) the number of rows and
their summed time in each trace, the time ratio B / A, sorted by |B - A| so the rows where
the simulator is most wrong come first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from explorer.model.columns import num, strings
from explorer.model.scope import Scope
from simcore.trace import Trace

LEVELS = ("layer", "op", "kernel")
COLUMNS = ("level", "name", "a_count", "b_count", "a_time_ns", "b_time_ns", "delta_ns", "ratio", "status")


def is_measured(trace: Trace) -> bool:
    """A trace that says it is not a simulation (imports from real profilers)."""
    sim = trace.meta.get("simulator")
    return isinstance(sim, dict) and sim.get("is_simulation") is False


def _in_scope(start: np.ndarray, dur: np.ndarray, scope: Scope | None) -> np.ndarray:
    keep = np.ones(len(start), bool)
    if scope is not None:
        if scope.t0 is not None:
            keep &= start + dur > scope.t0
        if scope.t1 is not None:
            keep &= start < scope.t1
    return keep


def name_totals(trace: Trace, scope: Scope | None = None) -> pd.DataFrame:
    """level, name, count, time_ns: every layer, op and kernel name with its summed time; with a
    resolved `scope`, ops overlapping its window and kernels overlapping it on its chips and cores."""
    ops, kernels = trace.ops, trace.kernels
    frames = []
    if ops.num_rows:
        start, dur = num(ops, "start_ns"), num(ops, "dur_ns")
        keep = _in_scope(start, dur, scope)
        frames.append(pd.DataFrame({"level": strings(ops, "level")[keep], "name": strings(ops, "name")[keep],
                                    "time_ns": dur[keep].astype(np.int64)}))
    if kernels.num_rows:
        start, dur = num(kernels, "start_ns"), num(kernels, "dur_ns")
        keep = _in_scope(start, dur, scope)
        if scope is not None and scope.chips is not None:
            keep &= np.isin(num(kernels, "chip"), list(scope.chips))
        if scope is not None and scope.cores is not None:
            keep &= np.isin(num(kernels, "core"), list(scope.cores))
        frames.append(pd.DataFrame({"level": "kernel", "name": strings(kernels, "name")[keep],
                                    "time_ns": dur[keep].astype(np.int64)}))
    if not frames:
        return pd.DataFrame({"level": [], "name": [], "count": [], "time_ns": []})
    f = pd.concat(frames, ignore_index=True)
    f = f[f["level"].isin(LEVELS)]
    f["name"] = f["name"].astype(str).str.strip()
    return f.groupby(["level", "name"], as_index=False, sort=False).agg(count=("time_ns", "size"), time_ns=("time_ns", "sum"))


def outer_merge(a: pd.DataFrame, b: pd.DataFrame, on: str | list[str]) -> pd.DataFrame:
    """A and B's rows side by side on `on` (suffixes _a/_b, `_merge` says which had the row). Two
    empty sides merge too: pandas cannot factorize empty Arrow-backed string keys (a window with
    nothing in either trace was a traceback in `trnx diff`), so those keys go as objects."""
    if a.empty and b.empty:
        keys = {k: object for k in ([on] if isinstance(on, str) else on)}
        a, b = a.astype(keys), b.astype(keys)
    return a.merge(b, on=on, how="outer", suffixes=("_a", "_b"), indicator=True)


def name_deltas(a: Trace, b: Trace, scope_a: Scope | None = None, scope_b: Scope | None = None) -> pd.DataFrame:
    """Per (level, name): counts and summed times in A and B, delta and ratio B / A, largest |delta| first."""
    ta, tb = name_totals(a, scope_a), name_totals(b, scope_b)
    m = outer_merge(ta, tb, ["level", "name"])
    out = pd.DataFrame({
        "level": m["level"].astype(str), "name": m["name"].astype(str),
        "a_count": m["count_a"].fillna(0).astype(np.int64), "b_count": m["count_b"].fillna(0).astype(np.int64),
        "a_time_ns": m["time_ns_a"].astype(np.float64), "b_time_ns": m["time_ns_b"].astype(np.float64),
    })
    out["delta_ns"] = out["b_time_ns"].fillna(0) - out["a_time_ns"].fillna(0)
    out["ratio"] = out["b_time_ns"] / out["a_time_ns"].where(out["a_time_ns"] > 0)
    out["status"] = m["_merge"].map({"both": "matched", "left_only": "only_a", "right_only": "only_b"}).astype(str)
    order = np.lexsort((out["name"].to_numpy(), out["level"].map(LEVELS.index).to_numpy(), -out["delta_ns"].abs().to_numpy()))
    return out.iloc[order].reset_index(drop=True)[list(COLUMNS)]
