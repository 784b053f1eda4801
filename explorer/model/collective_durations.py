"""Each collective's duration over time, and the outliers against its group's median.

One point per collective (its ranks' rows folded): `start_ns` is when its first rank
arrived, `duration_ns` runs from there to when its last rank finished (what the collective
cost the earliest rank: transfer plus the wait for the last arrival), `transfer_ns` from the
transfer's start to that end. A collective's group is its kind, message size and group size;
one at least `OUTLIER_RATIO` times its group's median duration is an outlier (groups of one
have none). What the collective duration chart draws and `trnx query` can check.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from explorer.model import columns
from simcore.trace import Trace

OUTLIER_RATIO = 1.25


def collective_durations(trace: Trace) -> pd.DataFrame:
    """One row per collective, by start: collective_id, kind, bytes, group_size, start_ns,
    duration_ns, transfer_ns, slowest_chip, group_median_ns, ratio, outlier."""
    t = trace.collectives
    cols = ["collective_id", "kind", "bytes", "group_size", "start_ns", "duration_ns", "transfer_ns",
            "slowest_chip", "group_median_ns", "ratio", "outlier"]
    if t.num_rows == 0:
        return pd.DataFrame({c: [] for c in cols})
    df = pd.DataFrame({
        "collective_id": columns.num(t, "collective_id"),
        "kind": [str(v) for v in t.column("kind").to_pylist()],
        "bytes": columns.num(t, "bytes"), "group_size": columns.num(t, "group_size"),
        "chip": columns.num(t, "chip"), "arrive": columns.num(t, "arrive_ns"),
        "start": columns.num(t, "start_ns"), "end": columns.num(t, "end_ns"),
    })
    g = df.groupby("collective_id", sort=True)
    last = df.loc[g["arrive"].idxmax(), ["collective_id", "chip"]].set_index("collective_id")["chip"]
    out = pd.DataFrame({
        "kind": g["kind"].first(), "bytes": g["bytes"].max(), "group_size": g["group_size"].max(),
        "start_ns": g["arrive"].min(), "duration_ns": g["end"].max() - g["arrive"].min(),
        "transfer_ns": g["end"].max() - g["start"].min(), "slowest_chip": last,
    }).reset_index()
    key = ["kind", "bytes", "group_size"]
    out["group_median_ns"] = out.groupby(key)["duration_ns"].transform("median")
    size = out.groupby(key)["duration_ns"].transform("size")
    out["ratio"] = out["duration_ns"] / out["group_median_ns"].where(out["group_median_ns"] > 0, np.nan)
    out["outlier"] = (size > 1) & (out["ratio"] >= OUTLIER_RATIO)
    return out.sort_values(["start_ns", "collective_id"], kind="stable").reset_index(drop=True)[cols]
