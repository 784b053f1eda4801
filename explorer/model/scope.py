"""What an analysis looks at: a time window, some chips, some tracks; and fast column access.

`Scope.resolve` turns the user's (chips, time_range, track_ids) into checked values
once, so summary, hierarchy and recommendations agree on what "the selection" is.
The column helpers hand out zero-copy numpy views of memory-mapped Arrow columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simcore.errors import UserError
from simcore.trace import Trace

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
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def num(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as numpy (zero-copy for one chunk)."""
    col = table.column(name)
    if col.num_chunks == 1:
        return col.chunk(0).to_numpy()
    if col.num_chunks == 0:
        return np.array([], dtype=col.type.to_pandas_dtype())
    return col.to_numpy()


def codes(table: pa.Table, name: str) -> tuple[np.ndarray, list[str]]:
    """A dictionary column as (int32 codes, vocabulary); plain strings are encoded."""
    col = table.column(name)
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode() if col.num_chunks else pa.chunked_array([], pa.dictionary(pa.int32(), pa.string()))
    if col.num_chunks == 0:
        return np.array([], dtype=np.int32), []
    if col.num_chunks == 1:
        chunk = col.chunk(0)
        return chunk.indices.to_numpy(zero_copy_only=False), chunk.dictionary.to_pylist()
    longest = max((c.dictionary for c in col.chunks), key=len)
    if all(longest[: len(c.dictionary)].equals(c.dictionary) for c in col.chunks):
        return np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in col.chunks]), longest.to_pylist()
    unified = pa.chunked_array(pa.Table.from_arrays([col], ["x"]).unify_dictionaries().column(0).chunks)
    return codes(pa.table({"x": unified.combine_chunks()}), "x")


def strings(table: pa.Table, name: str) -> np.ndarray:
    """A dictionary column decoded to a numpy object array (small tables only)."""
    c, vocab = codes(table, name)
    return np.asarray(vocab, dtype=object)[c] if len(vocab) else np.array([""] * len(c), dtype=object)


def code_of(vocab: list[str], value: str) -> int:
    """The code of `value` in a vocabulary, -1 if absent."""
    try:
        return vocab.index(value)
    except ValueError:
        return -1


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
        ids = num(t, "track_id").astype(np.int64)
        n = int(ids.max()) + 1 if len(ids) else 0
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


@dataclass(frozen=True)
class Scope:
    """A checked selection: window [t0, t1), chips (None = all), tracks (None = all)."""

    t0: int
    t1: int
    chips: tuple[int, ...] | None = None
    track_ids: tuple[int, ...] | None = None

    @property
    def duration_ns(self) -> int:
        return self.t1 - self.t0

    @property
    def is_whole(self) -> bool:
        return self.chips is None and self.track_ids is None

    @classmethod
    def resolve(
        cls,
        trace: Trace,
        tracks: Tracks,
        chips: Iterable[int] | None = None,
        time_range: tuple[int, int] | None = None,
        track_ids: Iterable[int] | None = None,
    ) -> Scope:
        """Check a selection against the trace; bad values raise one-sentence UserErrors."""
        if time_range is None:
            t0, t1 = trace.span_ns
        else:
            try:
                t0, t1 = (int(x) for x in time_range)
            except (TypeError, ValueError):
                raise UserError(f"time range {time_range!r} is not a pair of integer nanoseconds.") from None
            if t1 <= t0:
                raise UserError(f"time range {t0}..{t1} ns is empty; the end must be after the start.")
        chip_set: tuple[int, ...] | None = None
        if chips is not None:
            known = set(np.unique(tracks.chip[tracks.chip >= 0]).tolist())
            chip_set = tuple(sorted({int(c) for c in chips}))
            bad = [c for c in chip_set if c not in known]
            if bad:
                have = f"0..{max(known)}" if known else "none"
                raise UserError(f"chip {bad[0]} is not in this trace (chips: {have}).")
        ids: tuple[int, ...] | None = None
        if track_ids is not None:
            ids = tuple(sorted({int(t) for t in track_ids}))
            bad = [t for t in ids if t < 0 or t >= len(tracks) or tracks.kind[t] == ""]
            if bad:
                raise UserError(f"track {bad[0]} is not in this trace (it has tracks 0..{len(tracks) - 1}).")
        return cls(int(t0), int(t1), chip_set, ids)

    def track_mask(self, tracks: Tracks) -> np.ndarray:
        """Boolean mask over track ids: tracks this scope includes."""
        mask = tracks.kind != ""
        if self.chips is not None:
            mask &= np.isin(tracks.chip, self.chips)
        if self.track_ids is not None:
            sel = np.zeros(len(tracks), dtype=bool)
            sel[list(self.track_ids)] = True
            mask &= sel
        return mask

    def core_mask(self, tracks: Tracks) -> tuple[np.ndarray, np.ndarray]:
        """(chip, core) pairs whose kernels count: every core of the chips in scope, or
        with track_ids, the cores (and chips, for chip-level tracks) the tracks belong to."""
        m = self.track_mask(tracks)
        return tracks.chip[m], tracks.core[m]

    def describe(self) -> dict:
        return {
            "t0_ns": self.t0,
            "t1_ns": self.t1,
            "chips": None if self.chips is None else list(self.chips),
            "track_ids": None if self.track_ids is None else list(self.track_ids),
        }
