"""The operator tree narrowed to a Scope (`trnx ops --range/--chips/--cores/--tracks`).

A `ScopedHierarchy` is a `Hierarchy` whose kernels are those on the chips and cores in
scope that overlap the window, so every op and layer sums only those kernels (FLOPs,
bytes, MFU, MBU, roofline, bound). Rows are whole, never clipped: an op is kept when it
overlaps the window and, with chips, cores or tracks given, has a kernel or a collective
there; its time stays its span. Each kernel's HBM share is still that of its whole chip
(figured before narrowing): leaving a core out does not give the others its bandwidth.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.columns import num
from explorer.model.scope import Scope
from simcore.trace import Trace


class ScopedHierarchy(Hierarchy):
    def __init__(self, trace: Trace, scope: Scope) -> None:
        super().__init__(trace)
        self.scope = scope.resolve(trace, self.tracks)  # bad chips/cores/tracks: one sentence

    @cached_property
    def kernels(self) -> pd.DataFrame:
        k = Hierarchy.kernels.func(self)
        chips, cores = self.scope.core_mask(self.tracks)
        pairs = chips.astype(np.int64) * 65536 + cores
        keep = np.isin(k["chip"].to_numpy(np.int64) * 65536 + k["core"].to_numpy(np.int64), pairs)
        keep &= self.scope.in_window(k["start_ns"].to_numpy(), k["end_ns"].to_numpy())
        return k[keep].reset_index(drop=True)

    @cached_property
    def ops(self) -> pd.DataFrame:
        o = Hierarchy.ops.func(self)
        start, end = o["start_ns"].to_numpy(), o["end_ns"].to_numpy()
        keep = self.scope.in_window(start, end)
        if not self.scope.is_whole:
            keep &= np.isin(np.arange(len(o)), self._rows_with_work())
        return o[keep]

    def _rows_with_work(self) -> np.ndarray:
        """Op rows (positions in `_ops_raw`) at or above a kernel or collective in scope."""
        ids = pd.Index(self._ops_raw["op_id"].to_numpy())
        cc = self.trace.collectives
        cc_ops = np.array([], np.int64)
        if cc.num_rows:
            track, end = num(cc, "track_id"), num(cc, "end_ns")
            start = np.minimum(num(cc, "arrive_ns"), num(cc, "start_ns"))
            cc_ops = num(cc, "op_id")[self.scope.rows(self.scope.track_mask(self.tracks), track, start, end)]
        rows = ids.get_indexer(np.concatenate([self.kernels["op_id"].to_numpy(np.int64), cc_ops.astype(np.int64)]))
        _, ancestors = self._pairs(rows)
        return np.unique(ancestors)
