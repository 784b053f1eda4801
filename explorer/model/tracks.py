"""The `tracks` table as numpy, indexed by track id, and the track kinds the analyses group by."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace.semantics import check_tracks

from explorer.model.columns import num, strings

# Track kind -> the engine it belongs to (both Tensor rows are the tensor engine).
ENGINE_OF_KIND = {
    "tensor": "tensor",
    "tensor_matrix": "tensor",
    "vector": "vector",
    "scalar": "scalar",
    "gpsimd": "gpsimd",
    "sync": "sync",
}
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
DMA_KIND = "dma_queue"
CC_KIND = "cc"
KERNEL_KIND = "kernel"
COUNTER_KIND = "counter"


@dataclass(frozen=True)
class Tracks:
    """The `tracks` table as numpy arrays, indexed by track_id."""

    track_id: np.ndarray
    chip: np.ndarray
    core: np.ndarray
    kind: np.ndarray  # object array of kind strings
    name: np.ndarray  # object array of names

    @classmethod
    def of(cls, trace: Trace) -> Tracks:
        t = trace.tracks
        n = check_tracks(trace.path, t, {})  # ids 0..n-1 (open_trace checked it; validate=False did not)
        ids = num(t, "track_id").astype(np.int64)
        chip = np.full(n, -1, np.int64)
        core = np.full(n, -1, np.int64)
        kind = np.full(n, "", dtype=object)
        name = np.full(n, "", dtype=object)
        chip[ids] = num(t, "chip")
        core[ids] = num(t, "core")
        kind[ids] = strings(t, "kind")
        name[ids] = strings(t, "name")
        return cls(ids, chip, core, kind, name)

    def __len__(self) -> int:
        return len(self.chip)

    def check(self, table: str, track_ids: np.ndarray) -> np.ndarray:
        """`track_ids` unchanged, or a one-sentence UserError naming a track the tracks table lacks."""
        if len(track_ids):
            lo, hi = int(track_ids.min()), int(track_ids.max())
            valid = lo >= 0 and hi < len(self.kind)
            self.check_bounds(table, lo, hi, np.bincount(track_ids, minlength=len(self.kind)) if valid else None)
        return track_ids

    def check_bounds(self, table: str, lo: int, hi: int, rows_per_track: np.ndarray | None) -> None:
        """`check` from a table's smallest and largest track id and its rows per track id
        (what a pass over its batches gathers); counts are only read when lo and hi are valid."""
        bad = lo if lo < 0 else hi if hi >= len(self.kind) else None
        if bad is None:
            unknown = (rows_per_track > 0) & (self.kind == "")
            bad = int(np.flatnonzero(unknown)[0]) if unknown.any() else None
        if bad is not None:
            raise UserError(f"the trace's {table} table refers to track {bad}, which its tracks table lacks.")

    def of_kind(self, *kinds: str) -> np.ndarray:
        """Boolean mask over track ids."""
        return np.isin(self.kind, list(kinds))
