"""Neuron Explorer profiles (one directory per rank) -> one trnx trace.

Mapping, table by table (docs/interop.md has the full table and what is not mapped):
- rank (one profile directory) -> chip; `pcore_idx` (physical core of the Logical
  NeuronCore) -> core; profiles this project exported per logical core (`trnx_chip`,
  `trnx_lcore`) go back onto their chip, core = lcore x num_physical_cores + pcore_idx; `Instruction` -> `instructions` on one track per (core, engine /
  `timeline_track`); `DmaPacketAggregated` (else `DmaPacket`) -> `dma` per `queue_name`;
  `Flow` -> `flows`; `CcOp` -> `collectives` (matched across ranks by `op_id`);
  `HbmUsage`, `DmaUsage`, `SbufUsage`, `PsumUsage`, `Throttle` -> counters;
- kernels: one per (core, layer, hlo_name) spanning its instructions (as Neuron Explorer's
  hierarchy rows do), under an op per (layer, hlo_name), under a layer per `layer`;
  profiles this project exported carry `trnx_` fields that restore its own kernels and ops;
- `Metadata` -> meta.hardware (array size, clocks, HBM bandwidth) so MFU/MBU work, and
  with `Summary` into meta.neuron_profile for `trnx summary` to set beside ours.
Absolute hardware timestamps are rebased to the earliest of all ranks (ranks share the
device clock, as one host's and NTP-synchronised hosts' profiles do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from explorer.interop.kineto.builder import merge_strings
from explorer.interop.neuron_profile import schema as NS
from explorer.interop.neuron_profile.reader import Profile, read_profiles
from explorer.interop.neuron_profile.tables import (
    DTYPE_BYTES, ENGINE_ALIASES, NEURON_BF16_WEIGHT, TRACK_NAME, collective_kind, dtype_of_weight, floats, ints,
    memory_of, texts,
)
from simcore.errors import UserError
from simcore.trace import TraceWriter
from simcore.trace.schema import COUNTER_PSUM, COUNTER_SBUF, COUNTER_THROTTLE

SOURCE = "neuron-explorer"
NO_LAYER, NO_HLO = "(no layer)", "(no hlo)"
HBM_COUNTER, DMA_COUNTER = "HBM Bandwidth", "DMA Bandwidth"
SBUF_PERCENT, PSUM_PERCENT = "State Buffer Utilisation", "PSUM Utilisation"
MAX_CORES = 1024
_BUS = {"all_reduce": lambda p: 2 * (p - 1) / p}  # others (p - 1) / p, as simulated collectives


@dataclass
class NeuronImportReport:
    path: Path
    ranks: list[int]
    rows: dict[str, int]
    notes: list[str] = field(default_factory=list)


def _json_value(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not np.isfinite(v) else float(v)
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)


def _check_durations(p: Profile, table: str, start: np.ndarray, dur: np.ndarray) -> None:
    bad = np.flatnonzero(dur < 0)
    if len(bad):
        raise UserError(f"{p.path}/{table}.parquet has a negative duration at row {int(bad[0])}.")
    if len(start) and (start.min() < 0 or (start.max() > (1 << 62))):
        raise UserError(f"{p.path}/{table}.parquet has timestamps out of range (before the profile's first timestamp or past 2^62 ns).")


def _first_time(p: Profile) -> int:
    lows = [int(p.metadata["first_hw_timestamp"])]
    for name, col in (("Instruction", "start_ts"), ("DmaPacketAggregated", "start_ts"), ("DmaPacket", "start_ts"),
                      ("CcOp", "start_ts"), ("CcOp", "trigger_start_ts"), ("HbmUsage", "timestamp"),
                      ("DmaUsage", "timestamp"), ("SbufUsage", "timestamp"), ("PsumUsage", "timestamp"),
                      ("Throttle", "timestamp"), ("TrnxRuntime", "start_ts")):
        t = p.table(name)
        if t is not None and t.num_rows and col in t.column_names and t.column(col).null_count < t.num_rows:
            v = ints(t, col, np.iinfo(np.int64).max)
            lows.append(int(v.min()))
    return min(lows)


def _exact(profiles: list[Profile]) -> bool:
    """Profiles this project wrote carry its kernels and ops in `trnx_` fields: restore those."""
    return all(p.has("PenguinInstruction", "trnx_kernel_id") and p.has("FrameworkInstruction", "trnx_op_id")
               for p in profiles)


def _pcores(p: Profile, table: str, t: pa.Table) -> np.ndarray:
    core = ints(t, "pcore_idx", 0)
    if len(core) and (core.min() < 0 or core.max() >= MAX_CORES):
        raise UserError(f"{p.path}/{table}.parquet has pcore_idx {int(core.min() if core.min() < 0 else core.max())}, outside 0..{MAX_CORES - 1}.")
    return core


@dataclass(frozen=True)
class _Place:
    """Where a profile's NeuronCores go: its chip, the first physical core of its logical core (added to
    `pcore_idx`), and the rank collectives name it by (replica groups)."""

    chip: int
    offset: int = 0
    rank: int = 0
    lcore: int = -1


def _small_int(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v < 1 << 20


def _places(profiles: list[Profile]) -> list[_Place]:
    """Our exports: `trnx_chip` (and `trnx_lcore` for a logical core's profile); otherwise each profile
    directory is a chip, in the order of the directories."""
    chips = [p.metadata.get("trnx_chip") for p in profiles]
    lcores = [p.metadata.get("trnx_lcore", -1) for p in profiles]
    if all(_small_int(c, 0) for c in chips) and all(_small_int(lc, -1) for lc in lcores) \
            and len(set(zip(chips, lcores))) == len(chips):
        out = []
        for p, c, lc in zip(profiles, chips, lcores):
            if lc < 0:
                out.append(_Place(int(c), 0, int(c)))
                continue
            lnc = max(int(p.metadata.get("num_physical_cores") or 1), 1)
            per_chip = max(_cores_per_chip(p) // lnc, 1)
            out.append(_Place(int(c), int(lc) * lnc, int(c) * per_chip + int(lc), int(lc)))
        return out
    return [_Place(i, 0, i) for i in range(len(profiles))]


def _cores_per_chip(p: Profile) -> int:
    text = p.metadata.get("trnx_hardware")
    try:
        hw = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        hw = {}
    cores = hw.get("cores_per_chip") if isinstance(hw, dict) else None
    return cores if _small_int(cores, 1) else int(p.metadata.get("num_physical_cores") or 1)


class _Builder:
    """Accumulates every trnx table's columns over ranks, then writes them."""

    def __init__(self, t0: int, exact: bool) -> None:
        self.t0 = t0
        self.exact = exact
        self.tracks: dict[str, list[Any]] = {k: [] for k in ("track_id", "chip", "core", "lcore", "kind", "name", "unit")}
        self.parts: dict[str, list[dict[str, Any]]] = {k: [] for k in ("instructions", "dma", "kernels", "counters", "flows")}
        self.cc: list[dict[str, Any]] = []
        self.next_id = 0
        self.kernel_base = 0
        self.kernel_ops: list[tuple[str, str]] = []  # measured: each kernel's (layer, hlo)
        self.ops_exact: dict[int, tuple[int, str, str, str, int, int]] = {}
        self.notes: list[str] = []
        self.cores_per_chip = 1
        self.end = 0
        self.place = _Place(0)   # the profile being added
        self._track_of: dict[tuple[int, int, str, str], int] = {}

    def track(self, chip: int, core: int, kind: str, name: str, unit: str = "", lcore: int = -1) -> int:
        """The row (chip, core, kind, name), created on first use."""
        key = (chip, core, kind, name)
        if key in self._track_of:
            return self._track_of[key]
        tid = self._track_of[key] = len(self.tracks["track_id"])
        for k, v in (("track_id", tid), ("chip", chip), ("core", core), ("lcore", lcore), ("kind", kind), ("name", name),
                     ("unit", unit)):
            self.tracks[k].append(v)
        return tid

    def _rel(self, t: pa.Table, col: str) -> np.ndarray:
        return ints(t, col) - self.t0

    # -- one rank ----------------------------------------------------------------
    def add(self, place: _Place, p: Profile, hardware: dict[str, Any]) -> None:
        self.place = place
        rank = place.chip
        ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        rows = self._trnx_tracks(rank, p) if self.exact else None
        self._instructions(rank, p, ids)
        if rows is not None:
            self._trnx_runtime(p, rows)
        self._dma(rank, p, ids)
        self._flows(p, ids)
        self._collectives(rank, p, rows)
        if rows is not None and p.table("TrnxCounters") is not None:
            self._trnx_counters(p, rows)
        else:
            self._counters(rank, p, hardware)
        if self.exact:
            self._kernels_exact(rank, p)
            self._ops_exact(p)

    def _trnx_tracks(self, rank: int, p: Profile) -> np.ndarray | None:
        """Our export lists every row of the chip (rows without events too): create them in order."""
        t = p.table("TrnxTracks")
        if t is None:
            return None
        core = ints(t, "core")
        if len(core) and (core.min() < -1 or core.max() >= MAX_CORES):
            raise UserError(f"{p.path}/TrnxTracks.parquet has a core outside -1..{MAX_CORES - 1}.")
        kind, name, unit = (t.column(c).to_pylist() for c in ("kind", "name", "unit"))
        lcore = ints(t, "lcore", -1) if "lcore" in t.column_names else np.full(len(core), -1)
        if len(lcore) and (lcore.min() < -1 or lcore.max() >= MAX_CORES):
            raise UserError(f"{p.path}/TrnxTracks.parquet has an lcore outside -1..{MAX_CORES - 1}.")
        return np.array([self.track(rank, int(c), k, n, u, int(lc))
                         for c, k, n, u, lc in zip(core.tolist(), kind, name, unit, lcore.tolist())], np.int32)

    def _trnx_counters(self, p: Profile, rows: np.ndarray) -> None:
        t = p.table("TrnxCounters")
        idx = ints(t, "track_idx")
        if len(idx) and (idx.min() < 0 or idx.max() >= len(rows)):
            raise UserError(f"{p.path}/TrnxCounters.parquet names a track_idx outside TrnxTracks.")
        time = self._rel(t, "time_ns")
        if len(time):
            self.end = max(self.end, int(time.max()))
        self.parts["counters"].append({"track_id": rows[idx], "time_ns": time, "value": floats(t, "value", 0.0)})

    def _trnx_runtime(self, p: Profile, rows: np.ndarray) -> None:
        """Our export's Runtime rows (barriers, kernel launches), which Neuron's Instruction table has no place for."""
        t = p.table("TrnxRuntime")
        if t is None or not t.num_rows:
            return
        idx = ints(t, "track_idx")
        if idx.min() < 0 or idx.max() >= len(rows):
            raise UserError(f"{p.path}/TrnxRuntime.parquet names a track_idx outside TrnxTracks.")
        start, dur = self._rel(t, "start_ts"), ints(t, "duration_ns")
        _check_durations(p, "TrnxRuntime", start, dur)
        n = t.num_rows
        self.end = max(self.end, int((start + dur).max()))
        op_codes, op_vocab = texts(t, "opcode")
        self.parts["instructions"].append({
            "id": self.next_id + np.arange(n, dtype=np.int64), "track_id": rows[idx], "start_ns": start, "dur_ns": dur,
            "opcode": (op_codes, op_vocab), "kernel_id": np.full(n, -1, np.int64), "flops": np.zeros(n, np.int64),
            "bytes": np.zeros(n, np.int64), "dtype": (np.zeros(n, np.int64), [""])})
        self.next_id += n

    def _instructions(self, rank: int, p: Profile, ids: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        t = p.table("Instruction")
        if t is None or not t.num_rows:
            return
        n = t.num_rows
        start, dur = self._rel(t, "start_ts"), ints(t, "duration_ns")
        _check_durations(p, "Instruction", start, dur)
        core = _pcores(p, "Instruction", t) + self.place.offset
        self.cores_per_chip = max(self.cores_per_chip, int(core.max()) + 1)
        eng, eng_vocab = texts(t, "engine")
        tl, tl_vocab = texts(t, "timeline_track")
        pair = eng * len(tl_vocab) + tl
        uniq, pair_idx = np.unique(pair, return_inverse=True)
        kinds, names = [], []
        for key in uniq.tolist():
            e, line = eng_vocab[key // len(tl_vocab)], tl_vocab[key % len(tl_vocab)]
            engine = ENGINE_ALIASES.get(e.strip().lower())
            kind = "tensor_matrix" if line.replace("_", "").lower() == "tensormatrix" else (engine or e.strip().lower() or "unknown")
            kinds.append(kind)
            names.append(line or TRACK_NAME.get(kind, e))
        # one track per (core, engine row), in core then engine-row order
        combo = core * len(uniq) + pair_idx
        cu, track_of_row = np.unique(combo, return_inverse=True)
        order_rows = sorted(range(len(cu)), key=lambda i: (int(cu[i]) // len(uniq), list(TRACK_NAME).index(kinds[int(cu[i]) % len(uniq)]) if kinds[int(cu[i]) % len(uniq)] in TRACK_NAME else 99, names[int(cu[i]) % len(uniq)]))
        track_ids = np.zeros(len(cu), np.int32)
        for i in order_rows:
            c, k = divmod(int(cu[i]), len(uniq))
            track_ids[i] = self.track(rank, c, kinds[k], names[k])
        track = track_ids[track_of_row]
        new_id = self.next_id + np.arange(n, dtype=np.int64)
        self.next_id += n
        ids["instruction"] = self._id_map(p, "Instruction", ints(t, "id"), new_id)
        op_codes, op_vocab = texts(t, "opcode")
        raw = ints(t, "raw_flops")
        nbytes = ints(t, "trnx_bytes", -1)
        if (nbytes < 0).any():
            nbytes = np.where(nbytes < 0, sum(ints(t, c) for c in ("sbuf_read_bytes", "sbuf_write_bytes", "psum_read_bytes", "psum_write_bytes")), nbytes)
        if p.has("Instruction", "trnx_dtype"):
            dt_codes, dt_vocab = texts(t, "trnx_dtype")
        else:  # the dtype whose Neuron multiplier is adjusted_flops / raw_flops (bf16 without adjusted_flops)
            adj = floats(t, "adjusted_flops")
            weight = np.where(raw > 0, np.where(np.isnan(adj), 1.0, adj) / np.maximum(raw, 1), 0.0)
            wu, dt_codes = np.unique(np.round(weight, 6), return_inverse=True)
            dt_vocab = [dtype_of_weight(w) if w > 0 else "" for w in wu.tolist()]
        kernel = ints(t, "trnx_kernel_id", -1) if self.exact else self._kernels_measured(rank, t, core, start, start + dur, raw)
        self.end = max(self.end, int((start + dur).max()))
        self.parts["instructions"].append({
            "id": new_id, "track_id": track, "start_ns": start, "dur_ns": dur, "opcode": (op_codes, op_vocab),
            "kernel_id": kernel, "flops": raw, "bytes": np.maximum(nbytes, 0), "dtype": (dt_codes, dt_vocab)})

    def _id_map(self, p: Profile, table: str, old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(old, kind="stable")
        srt = old[order]
        if len(srt) > 1 and (srt[1:] == srt[:-1]).any():
            self.notes.append(f"{p.path}/{table}.parquet repeats ids; flows to repeated ids use the first row")
        return srt, new[order]

    def _kernels_measured(self, rank: int, t: pa.Table, core: np.ndarray, start: np.ndarray, end: np.ndarray,
                          raw: np.ndarray) -> np.ndarray:
        """One kernel per (core, layer, hlo_name): Neuron Explorer's HLO rows, per physical core."""
        lay, lay_vocab = texts(t, "layer", NO_LAYER)
        hlo, hlo_vocab = texts(t, "hlo_name", NO_HLO)
        lay_vocab = [v or NO_LAYER for v in lay_vocab]
        hlo_vocab = [v or NO_HLO for v in hlo_vocab]
        key = (core * len(lay_vocab) + lay) * len(hlo_vocab) + hlo
        uk, k = np.unique(key, return_inverse=True)
        m = len(uk)
        kstart = np.full(m, np.iinfo(np.int64).max)
        kend = np.zeros(m, np.int64)
        np.minimum.at(kstart, k, start)
        np.maximum.at(kend, k, end)
        transpose = ints(t, "flops_transpose")
        flops = np.bincount(k, weights=raw, minlength=m)
        adj = np.where(np.isnan(floats(t, "adjusted_flops")), raw, floats(t, "adjusted_flops"))
        adj_sum = np.bincount(k, weights=adj, minlength=m)
        dtypes = [dtype_of_weight(a / f) if f > 0 else "" for a, f in zip(adj_sum.tolist(), flops.tolist())]
        kcore = (uk // (len(lay_vocab) * len(hlo_vocab))).astype(np.int32)
        ids = self.kernel_base + np.arange(m, dtype=np.int64)
        self.kernel_base += m
        for key_ in uk.tolist():
            rest = key_ % (len(lay_vocab) * len(hlo_vocab))
            self.kernel_ops.append((lay_vocab[rest // len(hlo_vocab)], hlo_vocab[rest % len(hlo_vocab)]))
        self.parts["kernels"].append({
            "kernel_id": ids, "chip": np.full(m, rank, np.int32), "core": kcore,
            "name": [hlo_vocab[x % len(hlo_vocab)] for x in uk.tolist()],
            "start_ns": kstart, "dur_ns": kend - kstart, "flops": np.rint(flops).astype(np.int64),
            "model_flops": np.rint(flops - np.bincount(k, weights=transpose, minlength=m)).astype(np.int64),
            "hbm_read_bytes": np.bincount(k, weights=ints(t, "hbm_read_bytes"), minlength=m).astype(np.int64),
            "hbm_write_bytes": np.bincount(k, weights=ints(t, "hbm_write_bytes"), minlength=m).astype(np.int64),
            "dtype": dtypes})
        return ids[k]

    def _kernels_exact(self, rank: int, p: Profile) -> None:
        t = p.table("PenguinInstruction")
        if t is None or not t.num_rows:
            return
        start, end = self._rel(t, "start_ts"), self._rel(t, "end_ts")
        core = ints(t, "trnx_pcore_idx", 0)
        if len(core) and (core.min() < 0 or core.max() >= MAX_CORES):
            raise UserError(f"{p.path}/PenguinInstruction.parquet has trnx_pcore_idx outside 0..{MAX_CORES - 1}.")
        self.cores_per_chip = max(self.cores_per_chip, int(core.max()) + 1)
        self.end = max(self.end, int(end.max()))
        self.parts["kernels"].append({
            "kernel_id": ints(t, "trnx_kernel_id"), "chip": np.full(t.num_rows, rank, np.int32), "core": core.astype(np.int32),
            "op_id": ints(t, "trnx_op_id", -1), "name": texts(t, "penguin_name"), "start_ns": start,
            "dur_ns": np.maximum(end - start, 0), "flops": ints(t, "trnx_flops"), "model_flops": ints(t, "trnx_model_flops"),
            "hbm_read_bytes": ints(t, "hbm_read_bytes"), "hbm_write_bytes": ints(t, "hbm_write_bytes"),
            "dtype": texts(t, "trnx_dtype")})

    def _ops_exact(self, p: Profile) -> None:
        for name, level, col in (("FrameworkInstruction", "layer", "framework_name"), ("HloInstruction", "op", "hlo_name")):
            t = p.table(name)
            if t is None:
                continue
            op, parent = ints(t, "trnx_op_id", -1), ints(t, "trnx_parent_id", -1)
            start, end = self._rel(t, "start_ts"), self._rel(t, "end_ts")
            nm, kind = t.column(col).to_pylist(), t.column("trnx_kind").to_pylist() if "trnx_kind" in t.column_names else [None] * t.num_rows
            for i in range(t.num_rows):
                lvl = "model" if parent[i] < 0 else level
                self.ops_exact.setdefault(int(op[i]), (int(parent[i]), lvl, nm[i] or "", kind[i] or lvl, int(start[i]), int(end[i] - start[i])))

    def _dma(self, rank: int, p: Profile, ids: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        agg, pkt = p.table("DmaPacketAggregated"), p.table("DmaPacket")
        t, name = (agg, "DmaPacketAggregated") if agg is not None and agg.num_rows else (pkt, "DmaPacket")
        if t is None or not t.num_rows:
            return
        n = t.num_rows
        start, dur = self._rel(t, "start_ts"), ints(t, "duration_ns")
        _check_durations(p, name, start, dur)
        core = _pcores(p, name, t) + self.place.offset
        self.cores_per_chip = max(self.cores_per_chip, int(core.max()) + 1)
        q, q_vocab = texts(t, "queue_name")
        if not any(q_vocab):
            q, q_vocab = texts(t, "queue_type", "DMA")
        q_vocab = [v or "DMA" for v in q_vocab]
        combo = core * len(q_vocab) + q
        cu, inv = np.unique(combo, return_inverse=True)
        tids = np.array([self.track(rank, int(c) // len(q_vocab), "dma_queue", q_vocab[int(c) % len(q_vocab)]) for c in cu], np.int32)
        new_id = self.next_id + np.arange(n, dtype=np.int64)
        self.next_id += n
        if name == "DmaPacketAggregated":
            ids["dmablock"] = self._id_map(p, name, ints(t, "id"), new_id)
            src, s_vocab = texts(t, "source")
            dst, d_vocab = texts(t, "dest")
            src_v, dst_v = [memory_of(v) for v in s_vocab], [memory_of(v) for v in d_vocab]
            parts = np.maximum(ints(t, "read_num_sbuf_partitions"), ints(t, "write_num_sbuf_partitions"))
            if pkt is not None and pkt.num_rows:  # packets -> their transfer, for flows that name packets
                srt, new = ids["dmablock"]
                agg_of = ints(pkt, "packet_aggregation_id")
                pos = np.clip(np.searchsorted(srt, agg_of), 0, max(len(srt) - 1, 0))
                ok = srt[pos] == agg_of if len(srt) else np.zeros(len(agg_of), bool)
                ids["dmapacket"] = self._id_map(p, "DmaPacket", ints(pkt, "id")[ok], new[pos[ok]])
        else:
            ids["dmapacket"] = self._id_map(p, name, ints(t, "id"), new_id)
            src, src_v, dst, dst_v = np.zeros(n, np.int64), [""], np.zeros(n, np.int64), [""]
            parts = np.zeros(n, np.int64)
        self.end = max(self.end, int((start + dur).max()))
        nbytes = ints(t, "transfer_bytes")
        bad = np.flatnonzero(nbytes < 0)
        if len(bad):
            raise UserError(f"{p.path}/{name}.parquet has a negative transfer_bytes at row {int(bad[0])}.")
        self.parts["dma"].append({
            "id": new_id, "track_id": tids[inv], "start_ns": start, "dur_ns": dur, "bytes": nbytes,
            "partitions": parts.astype(np.int32), "src": (src, src_v), "dst": (dst, dst_v),
            "kernel_id": ints(t, "trnx_kernel_id", -1)})

    def _flows(self, p: Profile, ids: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        t = p.table("Flow")
        if t is None or not t.num_rows:
            return
        ends = []
        for side in ("in", "out"):
            tab, vocab = texts(t, f"{side}_table")
            keys = ["".join(ch for ch in v.lower() if ch.isalnum()) for v in vocab]
            keys = ["dmablock" if k in ("dmablock", "dmapacketaggregated", "dmaaggregated") else
                    "dmapacket" if k in ("dmapacket", "dma") else k for k in keys]
            old = ints(t, f"{side}_id")
            new = np.full(t.num_rows, -1, np.int64)
            for code, key in enumerate(keys):
                if key not in ids:
                    continue
                rows = np.flatnonzero(tab == code)
                srt, mapped = ids[key]
                if not len(srt):
                    continue
                pos = np.clip(np.searchsorted(srt, old[rows]), 0, len(srt) - 1)
                hit = srt[pos] == old[rows]
                new[rows[hit]] = mapped[pos[hit]]
            ends.append(new)
        ok = (ends[0] >= 0) & (ends[1] >= 0)
        if not ok.all():
            self.notes.append(f"{p.path}/Flow.parquet: {int((~ok).sum()):,} edges name rows that were not imported and were skipped")
        kind, kind_vocab = texts(t, "dependency_type", "dependency")
        self.parts["flows"].append({"src_id": ends[0][ok], "dst_id": ends[1][ok],
                                    "kind": (kind[ok], [v or "dependency" for v in kind_vocab])})

    def _collectives(self, rank: int, p: Profile, rows: np.ndarray | None = None) -> None:
        t = p.table("CcOp")
        if t is None or not t.num_rows:
            return
        if rows is not None and "trnx_track_idx" in t.column_names:   # our export: each rank's own CC row
            idx = ints(t, "trnx_track_idx", -1)
            if len(idx) and (idx.min() < 0 or idx.max() >= len(rows)):
                raise UserError(f"{p.path}/CcOp.parquet names a trnx_track_idx outside TrnxTracks.")
            tracks = rows[idx].astype(np.int64)
        else:
            tracks = np.full(t.num_rows, self.track(rank, -1, "cc", "CC"), np.int64)
        own_rank = ints(t, "trnx_rank", -1) if "trnx_rank" in t.column_names else np.full(t.num_rows, -1)
        start, end = self._rel(t, "start_ts"), self._rel(t, "end_ts")
        _check_durations(p, "CcOp", start, end - start)
        trig = ints(t, "trigger_start_ts", -1)
        arrive = np.where(trig >= 0, np.minimum(trig - self.t0, start), start)
        n = t.num_rows
        dtype = [str(x or "").lower() for x in t.column("dtype").to_pylist()]
        nbytes = ints(t, "input_size", -1)
        out_size = ints(t, "output_size", -1)
        elems = ints(t, "num_elements")
        guess = np.array([e * DTYPE_BYTES.get(d, 1) for e, d in zip(elems.tolist(), dtype)], np.int64)
        nbytes = np.where(nbytes >= 0, np.maximum(nbytes, out_size), np.where(out_size >= 0, out_size, guess))
        kinds = [collective_kind(str(x)) for x in t.column("operation").to_pylist()]
        self.end = max(self.end, int(end.max()))
        self.cc.append({"chip": rank, "who": self.place.rank, "path": p.path, "collective_id": ints(t, "op_id"), "kind": kinds,
                        "algorithm": [str(a or "").lower() for a in t.column("algorithm").to_pylist()],
                        "bytes": nbytes, "arrive_ns": arrive, "start_ns": start, "end_ns": end,
                        "algo_bw": floats(t, "algorithm_bandwidth"), "bus_bw": floats(t, "bus_bandwidth"),
                        "group": t.column("replica_group").to_pylist() if "replica_group" in t.column_names else [None] * n,
                        "track": tracks, "own_rank": own_rank})

    def _counters(self, rank: int, p: Profile, hardware: dict[str, Any]) -> None:
        sbuf = (hardware.get("sbuf") or {}).get("bytes_per_core")
        psum = (hardware.get("psum") or {}).get("bytes_per_core")
        for table, col, name, unit, scale in (
            ("HbmUsage", "current_throughput", HBM_COUNTER, "GB/s", 1e-9),
            ("DmaUsage", "current_throughput", DMA_COUNTER, "GB/s", 1e-9),
            ("SbufUsage", "avg_util_percent", COUNTER_SBUF if sbuf else SBUF_PERCENT, "bytes" if sbuf else "%", (sbuf or 100) / 100),
            ("PsumUsage", "avg_util_percent", COUNTER_PSUM if psum else PSUM_PERCENT, "bytes" if psum else "%", (psum or 100) / 100),
        ):
            t = p.table(table)
            if t is None or not t.num_rows or not p.has(table, col):
                continue
            keep = np.flatnonzero(np.isfinite(floats(t, col)))  # NaN or infinite samples say nothing: left out
            pcore = ints(t, "pcore_idx", -1)
            core = np.where(pcore < 0, -1, pcore + self.place.offset)[keep]
            if len(core) and core.max() >= MAX_CORES:
                raise UserError(f"{p.path}/{table}.parquet has pcore_idx {int(core.max())}, outside 0..{MAX_CORES - 1}.")
            self._series(rank, core, self._rel(t, "timestamp")[keep], floats(t, col)[keep] * scale, name, unit)
        t = p.table("Throttle")
        if t is not None and t.num_rows:
            self._throttle(rank, p, t)

    def _series(self, rank: int, core: np.ndarray, time: np.ndarray, value: np.ndarray, name: str, unit: str) -> None:
        for c in np.unique(core).tolist():
            sel = np.flatnonzero(core == c)
            order = sel[np.argsort(time[sel], kind="stable")]
            tid = self.track(rank, int(c), "counter", name, unit)
            self.end = max(self.end, int(time[order].max()))
            self.parts["counters"].append({"track_id": np.full(len(order), tid, np.int32), "time_ns": time[order],
                                           "value": value[order]})

    def _throttle(self, rank: int, p: Profile, t: pa.Table) -> None:
        """Throttle events (utilisation limit k/n for a duration) -> a Throttling counter (% allowed) per core."""
        ts, dur = self._rel(t, "timestamp"), ints(t, "duration")
        _check_durations(p, "Throttle", ts, dur)
        k, n = ints(t, "k"), ints(t, "n")
        if ((n <= 0) | (k < 0) | (k > n)).any():
            raise UserError(f"{p.path}/Throttle.parquet has a k/n outside 0..1 (k and n must satisfy 0 <= k <= n, n > 0).")
        limit = 100.0 * k / n
        core = ints(t, "pcore_idx", 0) + self.place.offset
        for c in np.unique(core).tolist():
            sel = np.flatnonzero(core == c)
            sel = sel[np.argsort(ts[sel], kind="stable")]
            times, values = ([0], [100.0]) if ts[sel[0]] > 0 else ([], [])
            for j, i in enumerate(sel.tolist()):
                times.append(int(ts[i]))
                values.append(float(limit[i]))
                end = int(ts[i] + dur[i])
                nxt = int(ts[sel[j + 1]]) if j + 1 < len(sel) else None
                if nxt is None or nxt > end:
                    times.append(end)
                    values.append(100.0)
            self._series(rank, np.full(len(times), c), np.array(times, np.int64), np.array(values), COUNTER_THROTTLE, "%")

    # -- finish ------------------------------------------------------------------
    def _collective_rows(self) -> dict[str, Any] | None:
        if not self.cc:
            return None
        chips_of: dict[int, list[int]] = {}   # the ranks (profiles) taking part in each collective
        for part in self.cc:
            for cid in np.unique(part["collective_id"]).tolist():
                chips_of.setdefault(cid, []).append(part["who"])
        cols: dict[str, list[Any]] = {k: [] for k in ("collective_id", "track_id", "chip", "rank", "group_size", "kind",
                                                     "algorithm", "op_id", "bytes", "arrive_ns", "start_ns", "end_ns",
                                                     "wait_ns", "algo_bw_gbps", "bus_bw_gbps")}
        for part in self.cc:
            chip, who = part["chip"], part["who"]
            for i, cid in enumerate(part["collective_id"].tolist()):
                members = _group(part["group"][i], who) or sorted(chips_of[cid])
                size = len(members)
                s, e, a = int(part["start_ns"][i]), int(part["end_ns"][i]), int(part["arrive_ns"][i])
                kind = part["kind"][i]
                algo = part["algo_bw"][i] / 1e9 if np.isfinite(part["algo_bw"][i]) else (part["bytes"][i] / (e - s) if e > s else 0.0)
                factor = _BUS.get(kind, lambda q: (q - 1) / q)(size) if size > 0 else 0.0
                bus = part["bus_bw"][i] / 1e9 if np.isfinite(part["bus_bw"][i]) else algo * factor
                own = int(part["own_rank"][i])
                pos = own if 0 <= own < size else (members.index(who) if who in members else 0)
                for k, v in (("collective_id", cid), ("track_id", int(part["track"][i])), ("chip", chip),
                             ("rank", pos), ("group_size", size), ("kind", kind),
                             ("algorithm", part["algorithm"][i]), ("op_id", -1), ("bytes", int(part["bytes"][i])),
                             ("arrive_ns", a), ("start_ns", s), ("end_ns", e), ("wait_ns", s - a),
                             ("algo_bw_gbps", float(algo)), ("bus_bw_gbps", float(bus))):
                    cols[k].append(v)
        order = np.lexsort((np.array(cols["arrive_ns"]), np.array(cols["track_id"])))
        return {k: [v[i] for i in order] for k, v in cols.items()}

    def _ops_measured(self, kernels: dict[str, np.ndarray], root: str, lo: int, hi: int) -> tuple[dict[str, Any], np.ndarray]:
        """Layers from `layer`, ops from `hlo_name` under them; each kernel's op id."""
        kstart, kend = kernels["start_ns"], kernels["start_ns"] + kernels["dur_ns"]
        layers: dict[str, list[int]] = {}
        ops: dict[tuple[str, str], list[int]] = {}
        for i, (layer, hlo) in enumerate(self.kernel_ops):
            layers.setdefault(layer, []).append(i)
            ops.setdefault((layer, hlo), []).append(i)

        def hull(rows: list[int]) -> tuple[int, int]:
            return int(kstart[rows].min()), int(kend[rows].max())

        rows: list[tuple[int, int, str, str, str, int, int]] = [(0, -1, "model", root, "model", lo, hi - lo)]
        op_of_kernel = np.full(len(self.kernel_ops), -1, np.int64)
        for layer in sorted(layers, key=lambda x: hull(layers[x])):
            lid = len(rows)
            s, e = hull(layers[layer])
            rows.append((lid, 0, "layer", layer, "layer", s, e - s))
            for key in sorted((k for k in ops if k[0] == layer), key=lambda k: hull(ops[k])):
                s, e = hull(ops[key])
                op_of_kernel[ops[key]] = len(rows)
                rows.append((len(rows), lid, "op", key[1], "hlo", s, e - s))
        return _op_columns(rows), op_of_kernel

    def write(self, out: Path, meta: dict[str, Any], overwrite: bool, root: str, span: tuple[int, int]) -> dict[str, int]:
        tables = {k: _concat(v) for k, v in self.parts.items()}
        kernels = tables["kernels"]
        kernel_track: dict[tuple[int, int], int] = {}
        if kernels:
            for chip, core in sorted(set(zip(kernels["chip"].tolist(), kernels["core"].tolist()))):
                kernel_track[(chip, core)] = self.track(chip, core, "kernel", "Kernels")
            kernels["track_id"] = np.array([kernel_track[(a, b)] for a, b in zip(kernels["chip"].tolist(), kernels["core"].tolist())], np.int32)
        if self.exact:
            if 0 not in self.ops_exact:
                self.ops_exact[0] = (-1, "model", root, "model", span[0], span[1] - span[0])
            ops = _op_columns([(i, *v) for i, v in sorted(self.ops_exact.items())])
        else:
            ops, op_of = self._ops_measured(kernels, root, *span) if kernels else (_op_columns([(0, -1, "model", root, "model", span[0], span[1] - span[0])]), None)
            if kernels:
                kernels["op_id"] = op_of
        with TraceWriter(out, {**meta, "span_ns": [int(span[0]), int(span[1])]}, overwrite=overwrite) as w:
            w.write("tracks", self.tracks)
            for name, sort in (("instructions", "start_ns"), ("dma", "start_ns"), ("kernels", "start_ns"), ("counters", "time_ns")):
                cols = tables[name]
                if cols:
                    order = np.lexsort((cols[sort], cols["track_id"]))
                    w.write(name, {k: _take(v, order) for k, v in cols.items()})
            if tables["flows"]:
                w.write("flows", tables["flows"])
            w.write("ops", ops)
            coll = self._collective_rows()
            if coll:
                w.write("collectives", coll)
        return {"instructions": len(tables["instructions"].get("id", ())), "dma": len(tables["dma"].get("id", ())),
                "kernels": len(kernels.get("kernel_id", ())), "ops": len(ops["op_id"]),
                "collectives": len(coll["chip"]) if coll else 0, "flows": len(tables["flows"].get("src_id", ())),
                "counters": len(tables["counters"].get("time_ns", ())), "tracks": len(self.tracks["track_id"])}


def _group(text: Any, chip: int) -> list[int] | None:
    """The replica group holding `chip` from a string like '[[0, 1], [2, 3]]' (None if unparsable)."""
    if not isinstance(text, str) or len(text) > 1 << 16:
        return None
    try:
        groups = json.loads(text)
    except ValueError:
        return None
    if isinstance(groups, list) and groups and all(isinstance(x, int) for x in groups):
        groups = [groups]
    if not isinstance(groups, list):
        return None
    for g in groups:
        if isinstance(g, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in g) and chip in g:
            return list(g)
    return None


def _op_columns(rows: list[tuple[int, int, str, str, str, int, int]]) -> dict[str, Any]:
    cols = list(zip(*rows))
    return {"op_id": np.array(cols[0], np.int64), "parent_id": np.array(cols[1], np.int64), "level": list(cols[2]),
            "name": list(cols[3]), "kind": list(cols[4]), "start_ns": np.array(cols[5], np.int64),
            "dur_ns": np.maximum(np.array(cols[6], np.int64), 0)}


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if not parts:
        return {}
    out: dict[str, Any] = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if isinstance(vals[0], tuple):
            out[key] = merge_strings(vals)
        elif isinstance(vals[0], list):
            out[key] = [x for v in vals for x in v]
        else:
            out[key] = np.concatenate([np.asarray(v) for v in vals])
    return out


def _take(v: Any, order: np.ndarray) -> Any:
    if isinstance(v, tuple):
        return v[0][order], v[1]
    return [v[i] for i in order.tolist()] if isinstance(v, list) else np.asarray(v)[order]


def hardware_of(profiles: list[Profile], ranks: list[int], cores: int) -> dict[str, Any]:
    """`ranks`: each profile's chip."""
    """meta.hardware from the Metadata rows (or the block this project exported, when present)."""
    for p in profiles:
        text = p.metadata.get("trnx_hardware")
        if isinstance(text, str):
            try:
                hw = json.loads(text)
            except ValueError:
                hw = None
            if isinstance(hw, dict):
                return {**hw, "chips": max(ranks) + 1}
    m = profiles[0].metadata
    f = lambda k: float(m[k]) if isinstance(m.get(k), (int, float)) and not isinstance(m.get(k), bool) and m[k] > 0 else None  # noqa: E731
    return {
        "name": str(m.get("instance_type") or "neuron"),
        "description": "from a Neuron Explorer profile's Metadata",
        "chips": max(ranks) + 1, "cores_per_chip": max(cores, int(m.get("num_physical_cores") or 1)),
        "lnc": int(m.get("num_physical_cores") or 1),
        "tensor": {"rows": f("tensor_engine_num_rows"), "cols": f("tensor_engine_num_cols"),
                   "clock_ghz": f("tensor_engine_clock_freq"), "bf16_flop_weight": dict(NEURON_BF16_WEIGHT)},
        "vector": {"clock_ghz": f("vector_engine_clock_freq"), "channels": f("vector_engine_num_channels")},
        "scalar": {"clock_ghz": f("scalar_engine_clock_freq"), "channels": f("scalar_engine_num_channels")},
        "gpsimd": {"clock_ghz": f("gpsimd_engine_clock_freq"), "channels": f("gpsimd_engine_num_channels")},
        # Neuron's MBU divides by one HBM stack's bandwidth: so does ours for an imported profile
        "hbm": {"bandwidth_gbps": (f("hbm_ddr_bandwidth") or 0) / 1e9 or None},
        "dma": {"engines_per_core": f("num_dma_engines_per_neuroncore"),
                "bandwidth_gbps_per_core": (f("dma_ddr_bandwidth") or 0) / 1e9 or None},
        "neuroncore_clock_ghz": f("neuroncore_clock_freq"),
    }


def import_neuron_profile(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                          overwrite: bool = False) -> NeuronImportReport:
    """Import Neuron Explorer profile directories (one per rank, or a directory of them) into `out`."""
    if not paths:
        raise UserError("name at least one Neuron Explorer profile directory to import.")
    profiles = read_profiles(list(paths))
    places = _places(profiles)
    ranks = [pl.chip for pl in places]
    t0 = min(_first_time(p) for p in profiles)
    exact = _exact(profiles)
    cores = max((int(p.metadata.get("num_physical_cores") or 1) for p in profiles), default=1)
    hw = hardware_of(profiles, ranks, cores)
    b = _Builder(t0, exact)
    for place, p in sorted(zip(places, profiles), key=lambda pp: (pp[0].chip, pp[0].offset)):
        b.add(place, p, hw)
    hw["cores_per_chip"] = max(int(hw.get("cores_per_chip") or 1), b.cores_per_chip)
    windows = [(int(p.metadata["first_hw_timestamp"]) - t0, int(p.metadata["last_hw_timestamp"]) - t0) for p in profiles]
    span = (0, max([b.end, *(hi for _, hi in windows)]))
    first = profiles[0].metadata
    root = str(first.get("profile_name") or profiles[0].path.name)
    who = sorted(pl.rank for pl in places)
    workload: dict[str, Any] = {"name": root, "kind": "profile", "ranks": who}
    if isinstance(first.get("trnx_workload"), str):
        try:
            workload = {**json.loads(first["trnx_workload"]), "ranks": who}
        except ValueError:
            pass
    simulated = [bool(p.metadata.get("is_simulation")) for p in profiles]
    meta = {
        "source": SOURCE,
        "hardware": hw,
        "workload": workload,
        "simulator": {"name": "neuron-explorer", "is_simulation": all(simulated)},
        "capture": {"files": [str(p.path) for p in profiles], "t0_hw_ns": int(t0)},
        "neuron_profile": {
            "schema_version": str(first.get("profile_schema_version")),
            "ranks": [{"chip": pl.chip, **({"lcore": pl.lcore} if pl.lcore >= 0 else {}), "path": str(p.path),
                       "window_ns": list(w),
                       "metadata": {k: _json_value(v) for k, v in p.metadata.items() if not k.startswith(NS.EXTENSION_PREFIX)},
                       "summary": None if p.summary is None else {k: _json_value(v) for k, v in p.summary.items()}}
                      for pl, p, w in sorted(zip(places, profiles, windows), key=lambda x: (x[0].chip, x[0].offset))],
        },
        "import": {"notes": b.notes},
    }
    rows = b.write(Path(out), meta, overwrite, root, span)
    return NeuronImportReport(Path(out), who, rows, b.notes)
