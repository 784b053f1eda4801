"""One row per collective: its time, the waits it caused and the slowest rank.

The summary reports this next to the metrics (`trnx summary`): for each collective,
its kind, group size, bytes, transfer time, total and longest wait, and the rank
that arrived last (the one every other rank waited for).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from explorer.model.columns import num, strings
from explorer.model.scope import Scope
from simcore.trace import Trace

COLUMNS = ("collective_id", "kind", "algorithm", "op_id", "group_size", "bytes", "arrive_ns", "start_ns", "end_ns",
           "transfer_ns", "total_wait_ns", "max_wait_ns", "slowest_chip", "slowest_rank", "slowest_lead_ns",
           "bus_bw_gbps", "track_ids")


def collective_table(trace: Trace, scope: Scope | None = None) -> pd.DataFrame:
    """Per-collective stats for the ranks in scope whose collectives overlap its window."""
    cc = trace.collectives
    if not cc.num_rows:
        return pd.DataFrame(columns=list(COLUMNS))
    f = pd.DataFrame({
        "collective_id": num(cc, "collective_id"), "track_id": num(cc, "track_id"), "chip": num(cc, "chip"),
        "rank": num(cc, "rank"), "group_size": num(cc, "group_size"), "kind": strings(cc, "kind"),
        "algorithm": strings(cc, "algorithm"), "op_id": num(cc, "op_id"), "bytes": num(cc, "bytes"),
        "arrive_ns": num(cc, "arrive_ns"), "start_ns": num(cc, "start_ns"), "end_ns": num(cc, "end_ns"),
        "wait_ns": num(cc, "wait_ns"), "bus_bw_gbps": num(cc, "bus_bw_gbps"),
    })
    if scope is not None:
        keep = (f["arrive_ns"] < scope.t1) & (f["end_ns"] > scope.t0)
        if scope.chips is not None:
            keep &= f["chip"].isin(scope.chips)
        if scope.track_ids is not None:
            keep &= f["track_id"].isin(scope.track_ids)
        f = f[keep]
    if f.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    f = f.sort_values(["collective_id", "arrive_ns", "rank"], kind="stable")
    g = f.groupby("collective_id", sort=True)
    last = f.drop_duplicates("collective_id", keep="last").set_index("collective_id")
    second = g["arrive_ns"].agg(lambda a: a.iloc[-2] if len(a) > 1 else a.iloc[-1])
    out = pd.DataFrame({
        "kind": g["kind"].first(), "algorithm": g["algorithm"].first(), "op_id": g["op_id"].first(),
        "group_size": g["group_size"].first(), "bytes": g["bytes"].max(), "arrive_ns": g["arrive_ns"].min(),
        "start_ns": g["start_ns"].max(), "end_ns": g["end_ns"].max(),
        "total_wait_ns": g["wait_ns"].sum(), "max_wait_ns": g["wait_ns"].max(),
        "slowest_chip": last["chip"], "slowest_rank": last["rank"],
        "slowest_lead_ns": last["arrive_ns"] - second, "bus_bw_gbps": g["bus_bw_gbps"].mean(),
        "track_ids": g["track_id"].agg(lambda t: sorted(set(int(x) for x in t))),
    })
    out["transfer_ns"] = out["end_ns"] - out["start_ns"]
    out = out.reset_index()
    out["slowest_lead_ns"] = out["slowest_lead_ns"].astype(np.int64)
    return out[list(COLUMNS)]
