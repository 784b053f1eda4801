"""A trace -> Neuron Explorer's Parquet tables (schema 7.4.0), so scripts written against a
Neuron profile run unchanged on a simulated trace.

One profile directory per logical NeuronCore, as Neuron Explorer profiles one rank each: a trace
of ranks (a parallel capture, `tracks.lcore` >= 0) writes OUT/rank_<rank>/ per logical core (rank
= chip x ranks per chip + logical core; `pcore_idx` = the physical core within it, 0..lnc-1;
`neuroncore_idx` the logical core, `neuron_device_idx` the chip); the chip's shared rows (HBM and
link counters) travel with its first logical core's profile. A chip-wide program (no ranks) is
one profile per chip whose physical cores are the chip's (`pcore_idx` = core). A single profile
is written straight into OUT. Types, names and units are those of
`explorer.interop.neuron_profile.schema`; fields Neuron Explorer lacks carry `trnx_` (kernels,
ops, dtypes, the hardware block) so `trnx import OUT` restores the trace. docs/interop.md lists
what each table holds and what is not exported.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from explorer.export.selection import export_scope
from explorer.interop.neuron_profile import schema as NS
from explorer.interop.neuron_profile.tables import MEMORY_TOKEN, OPERATION_OF_KIND, TRACK_NAME
from explorer.model.intervals import sorted_runs
from explorer.model.analysis.peaks import Peaks
from explorer.model.columns import codes, num, strings
from explorer.model.tracks import ENGINE_OF_KIND
from explorer.model.analysis.summary import summarize
from simcore.errors import UserError
from simcore.tempfiles import clean_stale, rename_noreplace, sibling
from simcore.trace import Trace
from simcore.trace.target import check_not_in_trace
from simcore.trace.schema import COUNTER_HBM_READ, COUNTER_HBM_WRITE, COUNTER_PSUM, COUNTER_SBUF, COUNTER_THROTTLE, OPCODE_TRANSPOSE

THROTTLE_N = 1_000_000  # Throttle rows write the limit as k / 10^6


def _write(d: Path, spec: NS.Table, cols: dict[str, Any]) -> int:
    """Write `cols` as `<Table>.parquet` with exactly the schema's types, in the schema's field order."""
    arrays, fields = [], []
    for f in spec.fields:
        if f.name not in cols:
            assert not f.required, f"{spec.name}.{f.name} is required"
            continue
        v = cols[f.name]
        arr = v if isinstance(v, pa.Array) else pa.array(v.tolist() if isinstance(v, np.ndarray) and v.dtype == object else v, f.arrow, from_pandas=True)
        arrays.append(arr.cast(f.arrow) if arr.type != f.arrow else arr)
        fields.append(pa.field(f.name, f.arrow, nullable=not f.required))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    pq.write_table(table, d / f"{spec.name}.parquet", compression="zstd")
    return table.num_rows


class _Chip:
    """Everything of one profile the tables need, as numpy arrays: a logical core of a chip (`lcore` >= 0;
    `shared` adds the chip's rows of no logical core) or a whole chip (`lcore` -1)."""

    def __init__(self, trace: Trace, chip: int, ctx: _Context, lcore: int = -1, shared: bool = True) -> None:
        self.chip = chip
        self.lcore = lcore
        self.offset = lcore * ctx.lnc if lcore >= 0 else 0   # physical core - pcore_idx
        tr = ctx.tracks
        on_chip = tr["chip"] == chip
        if lcore >= 0:
            on_chip &= (tr["lcore"] == lcore) | ((tr["lcore"] < 0) & shared)
        self.track_ids = np.flatnonzero(on_chip)
        mine = np.zeros(len(tr["chip"]), bool)
        mine[self.track_ids] = True
        self.mine = mine
        ins = _rows(trace, "instructions", chip, mine)
        # the runtime's rows (simcore.timing.runtime) are no device instructions: Neuron Explorer shows
        # the runtime in its system profile, so they travel in our TrnxRuntime table, not in Instruction
        runtime = ctx.tracks["kind"] == "runtime"
        on_runtime = runtime[num(ins, "track_id")] if ins.num_rows else np.zeros(0, bool)
        self.ins = ins.filter(pa.array(~on_runtime)) if on_runtime.any() else ins
        self.runtime = ins.filter(pa.array(on_runtime)) if on_runtime.any() else ins.slice(0, 0)
        self.dma = _rows(trace, "dma", chip, mine)
        self.kernels = _rows(trace, "kernels", chip, mine)
        self.cc = _rows(trace, "collectives", chip, mine)   # each rank's part is on its own CC row
        self.ctr = _rows(trace, "counters", chip, mine)


def _rows(trace: Trace, name: str, chip: int, mine: np.ndarray | None, chip_column: bool = False) -> pa.Table:
    parts = trace.partition_chips(name)
    t = trace.table(name, [chip] if parts is not None else None)
    if not t.num_rows:
        return t
    keep = num(t, "chip") == chip if chip_column else mine[np.clip(num(t, "track_id"), 0, len(mine) - 1)]
    return t.filter(pa.array(keep))


class _Context:
    """Trace-wide lookups shared by every chip's profile."""

    def __init__(self, trace: Trace) -> None:
        t = trace.tracks
        self.tracks = {"chip": num(t, "chip"), "core": num(t, "core"), "kind": strings(t, "kind"),
                       "name": strings(t, "name"), "unit": strings(t, "unit"),
                       "lcore": num(t, "lcore") if "lcore" in t.schema.names else np.full(t.num_rows, -1)}
        topo = (trace.meta.get("capture") or {}).get("topology") or {}
        per_chip = topo.get("ranks_per_chip", 1) if isinstance(topo, dict) else 1
        self.ranks_per_chip = per_chip if isinstance(per_chip, int) and per_chip > 0 else 1
        lnc = (trace.meta.get("capture") or {}).get("lnc")
        self.lnc = lnc if isinstance(lnc, int) and not isinstance(lnc, bool) and lnc > 0 else 1
        self.peaks = Peaks.from_meta(trace.hardware)
        ops = trace.ops
        self.op_id = num(ops, "op_id")
        self.op_parent = num(ops, "parent_id")
        self.op_level = strings(ops, "level")
        self.op_name = strings(ops, "name")
        self.op_kind = strings(ops, "kind")
        self.op_start = num(ops, "start_ns")
        self.op_dur = num(ops, "dur_ns")
        self.row_of_op = {int(o): i for i, o in enumerate(self.op_id.tolist())}
        # each op's nearest layer-or-model ancestor (itself for a layer): the Neuron `layer`
        self.layer_of = {}
        for i, o in enumerate(self.op_id.tolist()):
            j, hops = i, 0
            while self.op_level[j] == "op" and self.op_parent[j] in self.row_of_op and hops < 64:
                j, hops = self.row_of_op[int(self.op_parent[j])], hops + 1
            self.layer_of[o] = j


def _engine(kind: str) -> str:
    return ENGINE_OF_KIND.get(kind, kind)


def _instructions(c: _Chip, ctx: _Context, kernel_op: dict[int, int]) -> dict[str, Any]:
    t = c.ins
    n = t.num_rows
    track = num(t, "track_id").astype(np.int64)
    start, dur = num(t, "start_ns").astype(np.int64), num(t, "dur_ns").astype(np.int64)
    kind = ctx.tracks["kind"][track]
    # pc: the instruction's index on its engine row (rows are grouped by track, sorted by start)
    order = np.lexsort((start, track))
    pc = np.empty(n, np.int64)
    if n:
        first = np.r_[True, track[order][1:] != track[order][:-1]]
        run_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
        pc[order] = np.arange(n) - run_start
    kernel = num(t, "kernel_id").astype(np.int64)
    flops = num(t, "flops").astype(np.int64)
    dcodes, dvocab = codes(t, "dtype")
    w = np.array([ctx.peaks.weight(d) or 1.0 for d in dvocab] or [1.0])
    adjusted = np.rint(flops * w[dcodes]).astype(np.int64) if n else np.zeros(0, np.int64)
    opc, ovocab = codes(t, "opcode")
    transpose = np.array([o == OPCODE_TRANSPOSE for o in ovocab] or [False])[opc] if n else np.zeros(0, bool)
    op = np.array([kernel_op.get(k, -1) for k in kernel.tolist()], np.int64)
    row = np.array([ctx.row_of_op.get(o, -1) for o in op.tolist()], np.int64)
    layer_row = np.array([ctx.layer_of.get(o, -1) if o >= 0 else -1 for o in op.tolist()], np.int64)
    hlo = np.where(row >= 0, ctx.op_name[np.maximum(row, 0)] if len(ctx.op_name) else "", None).astype(object)
    layer = np.where(layer_row >= 0, ctx.op_name[np.maximum(layer_row, 0)] if len(ctx.op_name) else "", None).astype(object)
    return {
        "start_ts": start, "end_ts": start + dur, "duration_ns": dur,
        "engine": np.array([_engine(k) for k in kind], dtype=object),
        "timeline_track": ctx.tracks["name"][track].astype(object),
        "pcore_idx": ctx.tracks["core"][track].astype(np.int64) - c.offset,
        "opcode": t.column("opcode").cast(pa.string()).combine_chunks() if n else pa.array([], pa.string()),
        "operands": np.full(n, "", dtype=object), "id": num(t, "id").astype(np.int64), "pc": pc,
        "bir_id": np.array([f"trnx:{i}" for i in num(t, "id").tolist()], dtype=object),
        "raw_penguin_id": kernel, "hlo_name": hlo, "raw_hlo_id": np.where(op >= 0, op, -1),
        "raw_framework_id": np.where(layer_row >= 0, ctx.op_id[np.maximum(layer_row, 0)] if len(ctx.op_id) else -1, -1),
        "layer": layer, "raw_flops": flops, "adjusted_flops": adjusted,
        "flops_transpose": np.where(transpose, flops, 0), "adjusted_flops_transpose": np.where(transpose, adjusted, 0),
        "trnx_bytes": num(t, "bytes").astype(np.int64),
        "trnx_dtype": t.column("dtype").cast(pa.string()).combine_chunks() if n else pa.array([], pa.string()),
        "trnx_kernel_id": kernel,
    }


def _dma(c: _Chip, ctx: _Context) -> tuple[dict[str, Any], dict[str, Any]]:
    t = c.dma
    n = t.num_rows
    track = num(t, "track_id").astype(np.int64)
    start, dur = num(t, "start_ns").astype(np.int64), num(t, "dur_ns").astype(np.int64)
    nbytes = num(t, "bytes").astype(np.int64)
    ids = num(t, "id").astype(np.int64)
    src, dst = strings(t, "src"), strings(t, "dst")
    parts = num(t, "partitions").astype(np.int64)
    src_sb = np.array([s in ("sbuf", "psum") for s in src], bool)
    dst_sb = np.array([s in ("sbuf", "psum") for s in dst], bool)
    neither = ~src_sb & ~dst_sb
    thr = np.divide(nbytes * 1e9, dur, out=np.zeros(n), where=dur > 0)
    name = ctx.tracks["name"][track].astype(object)
    core = ctx.tracks["core"][track].astype(np.int64) - c.offset
    qidx = np.unique(name, return_inverse=True)[1] if n else np.zeros(0, np.int64)
    empty = np.full(n, "", dtype=object)
    agg = {
        "start_ts": start, "end_ts": start + dur, "duration_ns": dur, "id": ids, "pcore_idx": core,
        "block_id": np.zeros(n, np.int32), "queue_idx": qidx, "queue_name": name, "queue_type": np.full(n, "data", dtype=object),
        "op": np.where(dst_sb, "read", "write").astype(object), "variable": empty,
        "read_bytes": nbytes, "write_bytes": nbytes, "transfer_bytes": nbytes, "throughput": thr,
        "source": np.array([MEMORY_TOKEN.get(s, f"[{s.upper()}]") for s in src], dtype=object),
        "dest": np.array([MEMORY_TOKEN.get(s, f"[{s.upper()}]") for s in dst], dtype=object),
        "semaphore_id": empty, "read_sbuf_partitions": empty,
        "read_num_sbuf_partitions": np.where(src_sb | neither, parts, 0), "read_shape": empty, "read_offset": empty,
        "read_steps": empty, "write_sbuf_partitions": empty,
        "write_num_sbuf_partitions": np.where(dst_sb | neither, parts, 0), "write_shape": empty, "write_offset": empty,
        "write_steps": empty, "trnx_kernel_id": num(t, "kernel_id").astype(np.int64),
    }
    packets = {  # one packet per transfer: the simulator times transfers, not their packets
        "start_ts": start, "end_ts": start + dur, "duration_ns": dur, "pcore_idx": core, "id": ids,
        "packet_idx": np.zeros(n, np.int32), "packet_aggregation_id": ids, "read_bytes": nbytes, "write_bytes": nbytes,
        "transfer_bytes": nbytes, "throughput": thr, "queue_type": np.full(n, "data", dtype=object), "queue_name": name,
        "crc": np.zeros(n, np.int64),
    }
    return agg, packets


def _flows(trace: Trace, ins_ids: np.ndarray, dma_ids: np.ndarray) -> tuple[dict[str, Any], int]:
    f = trace.flows
    src, dst = num(f, "src_id").astype(np.int64), num(f, "dst_id").astype(np.int64)
    s_ins, d_ins = np.isin(src, ins_ids), np.isin(dst, ins_ids)
    s_dma, d_dma = np.isin(src, dma_ids), np.isin(dst, dma_ids)
    keep = (s_ins | s_dma) & (d_ins | d_dma)
    kind = strings(f, "kind")[keep] if f.num_rows else np.array([], dtype=object)
    dropped = int(((s_ins | s_dma) ^ (d_ins | d_dma)).sum())  # one end on this chip, the other elsewhere
    return {"in_id": src[keep], "out_id": dst[keep],
            "in_table": np.where(s_ins[keep], "instruction", "dma_block").astype(object),
            "out_table": np.where(d_ins[keep], "instruction", "dma_block").astype(object),
            "dependency_type": kind.astype(object)}, dropped


def _global_rank(ctx: _Context, chip: np.ndarray, track: np.ndarray) -> np.ndarray:
    """A collective row's rank in the whole system: its logical core's (chip x ranks per chip + lcore), or its chip."""
    lcore = ctx.tracks["lcore"][np.clip(track, 0, len(ctx.tracks["lcore"]) - 1)]
    return np.where(lcore >= 0, chip * ctx.ranks_per_chip + lcore, chip)


def _collectives(trace: Trace, c: _Chip, ctx: _Context) -> dict[str, Any]:
    t = c.cc
    n = t.num_rows
    cid = num(t, "collective_id").astype(np.int64)
    every = trace.collectives
    groups: dict[int, list[int]] = {}
    if every.num_rows:
        all_id, all_chip, all_rank = (num(every, k).astype(np.int64) for k in ("collective_id", "chip", "rank"))
        who = _global_rank(ctx, all_chip, num(every, "track_id").astype(np.int64))
        for i in np.flatnonzero(np.isin(all_id, cid)).tolist():
            groups.setdefault(int(all_id[i]), []).append((int(all_rank[i]), int(who[i])))
    row_of = np.full(len(ctx.tracks["chip"]), -1, np.int64)
    row_of[c.track_ids] = np.arange(len(c.track_ids))
    start, end, arrive = (num(t, k).astype(np.int64) for k in ("start_ns", "end_ns", "arrive_ns"))
    nbytes = num(t, "bytes").astype(np.int64)
    kinds = strings(t, "kind")
    return {
        "start_ts": start, "end_ts": end, "duration_ns": end - start,
        "operation": np.array([OPERATION_OF_KIND.get(k, k) for k in kinds], dtype=object),
        "algorithm": np.array([a.capitalize() for a in strings(t, "algorithm")], dtype=object),
        "num_elements": nbytes, "dtype": np.full(n, "uint8", dtype=object),  # bytes as uint8 elements
        "op_id": cid, "stream_id": np.zeros(n, np.int64), "stream_index": np.zeros(n, np.int64),
        "trigger_engine": np.full(n, "Sync", dtype=object), "input_size": nbytes,
        "algorithm_bandwidth": num(t, "algo_bw_gbps") * 1e9, "bus_bandwidth": num(t, "bus_bw_gbps") * 1e9,
        "trigger_start_ts": arrive, "cc_trigger_start_delay": start - arrive,
        "replica_group": np.array([json.dumps([[ch for _, ch in sorted(groups.get(int(i), []))]]) for i in cid.tolist()], dtype=object),
        "trnx_track_idx": row_of[num(t, "track_id").astype(np.int64)] if n else np.zeros(0, np.int64),
        "trnx_rank": num(t, "rank").astype(np.int64),
    }


def _active_time(ins: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """ActiveTime (merged runs per engine and core) and OpcodeSummary (per engine and opcode)."""
    engine, core = ins["engine"], ins["pcore_idx"]
    start, end = ins["start_ts"], ins["end_ts"]
    rows: dict[str, list[Any]] = {"start_ts": [], "end_ts": [], "engine": [], "pcore_idx": [], "duration_ns": []}
    for (e, p) in sorted(set(zip(engine.tolist(), core.tolist()))):
        sel = np.flatnonzero((engine == e) & (core == p))
        o = sel[np.argsort(start[sel], kind="stable")]
        rs, re_ = sorted_runs(start[o], end[o])
        rows["start_ts"] += rs.tolist()
        rows["end_ts"] += re_.tolist()
        rows["engine"] += [e] * len(rs)
        rows["pcore_idx"] += [p] * len(rs)
        rows["duration_ns"] += (re_ - rs).tolist()
    return rows


def _opcode_summary(ins: dict[str, Any], total_ns: int) -> dict[str, Any]:
    engine = ins["engine"]
    opcode = np.asarray(ins["opcode"].to_pylist() if isinstance(ins["opcode"], pa.Array) else ins["opcode"], dtype=object)
    start, end, core = ins["start_ts"], ins["end_ts"], ins["pcore_idx"]
    out: dict[str, list[Any]] = {k: [] for k in ("engine", "opcode", "instruction_count", "instruction_time_ns", "active_time_ns", "active_time_percent")}
    for e, o in sorted(set(zip(engine.tolist(), opcode.tolist()))):
        sel = np.flatnonzero((engine == e) & (opcode == o))
        active = 0
        for p in np.unique(core[sel]).tolist():  # merged per physical core, summed over cores
            s = sel[core[sel] == p]
            s = s[np.argsort(start[s], kind="stable")]
            rs, re_ = sorted_runs(start[s], end[s])
            active += int((re_ - rs).sum())
        out["engine"].append(e)
        out["opcode"].append(o)
        out["instruction_count"].append(len(sel))
        out["instruction_time_ns"].append(int((end[sel] - start[sel]).sum()))
        out["active_time_ns"].append(active)
        out["active_time_percent"].append(100.0 * active / total_ns if total_ns > 0 else 0.0)
    return out


def _step_series(time: np.ndarray, value: np.ndarray, span_end: int) -> np.ndarray:
    """Length each sample holds (to the next sample, the last to the end of the trace)."""
    nxt = np.r_[time[1:], max(span_end, int(time[-1]) if len(time) else 0)]
    return np.maximum(nxt - time, 0)


def _counters(c: _Chip, ctx: _Context, hw: dict[str, Any], span: tuple[int, int]) -> dict[str, dict[str, Any]]:
    t = c.ctr
    out: dict[str, dict[str, Any]] = {}
    if not t.num_rows:
        return out
    track, time, value = num(t, "track_id").astype(np.int64), num(t, "time_ns").astype(np.int64), num(t, "value")
    name, core = ctx.tracks["name"], ctx.tracks["core"]
    # HBM: read + write throughput at every sample time of either (chip-level, bytes/s), cumulative bytes
    hbm = [tid for tid in np.unique(track).tolist() if name[tid] in (COUNTER_HBM_READ, COUNTER_HBM_WRITE)]
    if hbm:
        times = np.unique(time[np.isin(track, hbm)])
        total = np.zeros(len(times))
        for tid in hbm:
            sel = np.flatnonzero(track == tid)
            o = sel[np.argsort(time[sel], kind="stable")]
            idx = np.searchsorted(time[o], times, side="right") - 1
            total += np.where(idx >= 0, value[o][np.maximum(idx, 0)], 0.0)
        held = _step_series(times, total, span[1])
        cum = np.cumsum(np.r_[0.0, (total * held)[:-1]])  # GB/s x ns = bytes, up to each sample
        out["HbmUsage"] = {"timestamp": times, "current_throughput": total * 1e9, "total_transfer_bytes": np.rint(cum).astype(np.int64)}
    for table, counter, capacity in (("SbufUsage", COUNTER_SBUF, (hw.get("sbuf") or {}).get("bytes_per_core")),
                                     ("PsumUsage", COUNTER_PSUM, (hw.get("psum") or {}).get("bytes_per_core"))):
        tids = [tid for tid in np.unique(track).tolist() if name[tid] == counter and core[tid] >= 0]
        if not tids or not capacity:
            continue
        sel = np.flatnonzero(np.isin(track, tids))
        out[table] = {"timestamp": time[sel], "avg_util_percent": value[sel] / float(capacity) * 100.0,
                      "pcore_idx": core[track[sel]].astype(np.int64) - c.offset}
    rows: dict[str, list[Any]] = {k: [] for k in ("duration", "k", "n", "timestamp", "type", "pcore_idx")}
    for tid in [tid for tid in np.unique(track).tolist() if name[tid] == COUNTER_THROTTLE]:
        sel = np.flatnonzero(track == tid)
        o = sel[np.argsort(time[sel], kind="stable")]
        held = _step_series(time[o], value[o], span[1])
        for ts, v, d in zip(time[o].tolist(), value[o].tolist(), held.tolist()):
            if v < 100.0 and d > 0:
                rows["duration"].append(d)
                rows["k"].append(int(round(max(v, 0.0) * THROTTLE_N / 100.0)))
                rows["n"].append(THROTTLE_N)
                rows["timestamp"].append(ts)
                rows["type"].append("unknown")
                rows["pcore_idx"].append(int(max(core[tid] - c.offset, 0)))
    if rows["timestamp"]:
        out["Throttle"] = rows
    return out


def _hierarchy(c: _Chip, ctx: _Context) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[int, int]]:
    """FrameworkInstruction (model and layers), HloInstruction (ops), PenguinInstruction (this chip's kernels)."""
    k = c.kernels
    kid = num(k, "kernel_id").astype(np.int64)
    kop = num(k, "op_id").astype(np.int64)
    kstart, kdur = num(k, "start_ns").astype(np.int64), num(k, "dur_ns").astype(np.int64)
    flops, mflops = num(k, "flops").astype(np.int64), num(k, "model_flops").astype(np.int64)
    rd, wr = num(k, "hbm_read_bytes").astype(np.int64), num(k, "hbm_write_bytes").astype(np.int64)
    # op subtree totals over this chip's kernels
    n_ops = len(ctx.op_id)
    acc = {name: np.zeros(n_ops, np.int64) for name in ("flops", "mflops", "rd", "wr")}
    for j, o in enumerate(kop.tolist()):
        row, hops = ctx.row_of_op.get(o), 0
        while row is not None and hops < 256:
            acc["flops"][row] += flops[j]
            acc["mflops"][row] += mflops[j]
            acc["rd"][row] += rd[j]
            acc["wr"][row] += wr[j]
            row, hops = ctx.row_of_op.get(int(ctx.op_parent[row])), hops + 1

    def level(rows: np.ndarray, name_field: str) -> dict[str, Any]:
        s, d = ctx.op_start[rows], ctx.op_dur[rows]
        layer_rows = np.array([ctx.layer_of.get(int(ctx.op_id[r]), r) for r in rows.tolist()], np.int64)
        return {
            "id": ctx.op_id[rows], "raw_bir_id": np.full(len(rows), -1), "raw_penguin_id": np.full(len(rows), -1),
            "raw_hlo_id": np.where(ctx.op_level[rows] == "op", ctx.op_id[rows], -1),
            "raw_framework_id": ctx.op_id[layer_rows] if len(rows) else np.zeros(0, np.int64),
            name_field: ctx.op_name[rows].astype(object), "start_ts": s, "end_ts": s + d,
            "time_intervals": np.array([f"[[{a}, {a + b}]]" for a, b in zip(s.tolist(), d.tolist())], dtype=object),
            "element_count_per_interval": [[int(x) // 2] for x in acc["flops"][rows].tolist()],
            "transpose_element_count_per_interval": [[int(a - b) // 2] for a, b in zip(acc["flops"][rows].tolist(), acc["mflops"][rows].tolist())],
            "hbm_transfer_size_per_interval": [[int(a + b)] for a, b in zip(acc["rd"][rows].tolist(), acc["wr"][rows].tolist())],
            "hbm_read_bytes": acc["rd"][rows], "hbm_write_bytes": acc["wr"][rows],
            "trnx_op_id": ctx.op_id[rows], "trnx_parent_id": ctx.op_parent[rows], "trnx_kind": ctx.op_kind[rows].astype(object),
        }

    is_op = ctx.op_level == "op"
    framework = level(np.flatnonzero(~is_op), "framework_name")
    hlo = level(np.flatnonzero(is_op), "hlo_name")
    ktrack = num(k, "track_id").astype(np.int64)
    kcore = num(k, "core").astype(np.int64)
    layer_rows = np.array([ctx.layer_of.get(o, -1) for o in kop.tolist()], np.int64)
    penguin = {
        "id": kid, "raw_bir_id": np.full(len(kid), -1), "raw_penguin_id": kid, "raw_hlo_id": kop,
        "raw_framework_id": np.where(layer_rows >= 0, ctx.op_id[np.maximum(layer_rows, 0)] if n_ops else -1, -1),
        "penguin_name": k.column("name").cast(pa.string()).combine_chunks() if k.num_rows else pa.array([], pa.string()),
        "start_ts": kstart, "end_ts": kstart + kdur,
        "time_intervals": np.array([f"[[{a}, {a + b}]]" for a, b in zip(kstart.tolist(), kdur.tolist())], dtype=object),
        "element_count_per_interval": [[int(x) // 2] for x in flops.tolist()],
        "transpose_element_count_per_interval": [[int(a - b) // 2] for a, b in zip(flops.tolist(), mflops.tolist())],
        "hbm_transfer_size_per_interval": [[int(a + b)] for a, b in zip(rd.tolist(), wr.tolist())],
        "hbm_read_bytes": rd, "hbm_write_bytes": wr, "trnx_kernel_id": kid, "trnx_pcore_idx": kcore, "trnx_op_id": kop,
        "trnx_flops": flops, "trnx_model_flops": mflops,
        "trnx_dtype": k.column("dtype").cast(pa.string()).combine_chunks() if k.num_rows else pa.array([], pa.string()),
    }
    del ktrack
    return framework, hlo, penguin, dict(zip(kid.tolist(), kop.tolist()))


# Summary fields written from our metrics: (Neuron field, our metric, factor from ours to Neuron's unit)
_SUMMARY_FROM_OURS = (
    ("total_time", "total_time_ns", 1e-9), ("model_flops", "model_flops", 1), ("hardware_flops", "hardware_flops", 1),
    ("transpose_flops", "transpose_flops", 1), ("adjusted_hardware_flops", "hardware_flops_bf16", 1),
    ("mm_arithmetic_intensity", "mm_arithmetic_intensity", 1), ("peak_flops_bandwidth_ratio", "peak_flops_bandwidth_ratio", 1),
    ("dma_active_time", "dma_active_time_ns", 1e-9), ("dma_active_time_percent", "dma_active_time_percent", 1),
    ("dma_transfer_average_bytes", "dma_transfer_average_bytes", 1), ("dma_transfer_count", "dma_transfer_count", 1),
    ("dma_transfer_total_bytes", "dma_transfer_total_bytes", 1), ("mbu_estimated_percent", "mbu_estimated_percent", 1),
    ("hbm_write_bytes", "hbm_write_bytes", 1), ("hbm_read_bytes", "hbm_read_bytes", 1),
    ("mfu_estimated_percent", "mfu_estimated_percent", 1), ("hfu_estimated_percent", "hfu_estimated_percent", 1),
    *((f, m, k) for e in ("tensor", "vector", "scalar", "sync", "gpsimd") for f, m, k in (
        (f"{e}_engine_active_time", f"{e}_engine_active_time_ns", 1e-9),
        (f"{e}_engine_active_time_percent", f"{e}_engine_active_time_percent", 1),
        (f"{e}_engine_instruction_count", f"{e}_engine_instruction_count", 1))),
    ("cc_op_active_time", "cc_op_active_time_ns", 1e-9), ("cc_op_active_time_percent", "cc_op_active_time_percent", 1),
    ("cc_op_count", "cc_op_count", 1), ("total_active_time", "total_active_time_ns", 1e-9),
    ("total_active_time_percent", "total_active_time_percent", 1),
)


def _summary(trace: Trace, c: _Chip, ctx: _Context) -> dict[str, Any]:
    cores = None if c.lcore < 0 else range(c.offset, c.offset + ctx.lnc)
    m = summarize(trace, chips=[c.chip], cores=cores).metrics
    out: dict[str, Any] = {}
    for field, metric, factor in _SUMMARY_FROM_OURS:
        v = m.get(metric)
        if v is None:
            continue
        f = NS.SUMMARY.field(field)
        out[field] = [int(round(v * factor)) if f.type == "int64" else float(v) * factor]
    return out


def _metadata(trace: Trace, c: _Chip, ctx: _Context, span: tuple[int, int]) -> dict[str, Any]:
    hw = trace.hardware
    chip = c.chip
    g = lambda *keys, default=0.0: _dig(hw, keys, default)  # noqa: E731
    cores = int(hw.get("cores_per_chip") or 1) if isinstance(hw.get("cores_per_chip"), int) else 1
    if c.lcore >= 0:
        cores = ctx.lnc   # the physical cores of this logical core
    hbm = float(g("hbm", "bandwidth_gbps")) * 1e9
    stacks = max(int(g("hbm", "stacks", default=1) or 1), 1)
    sim = trace.meta.get("simulator")
    return {k: [v] for k, v in {
        "profile_schema_version": NS.SCHEMA_VERSION, "ntff_version": 0,  # 0: not from an NTFF
        "num_physical_cores": cores, "vnc_enabled": cores > 1,
        "first_hw_timestamp": span[0], "last_hw_timestamp": span[1],
        "first_ts": _unix(span[0]), "last_ts": _unix(span[1]),
        "dma_ddr_bandwidth": float(g("dma", "engine_gbps")) * float(g("dma", "engines_per_core")) * 1e9,
        "num_dma_engines_per_neuroncore": int(g("dma", "engines_per_core")),
        "hbm_ddr_bandwidth": hbm / stacks,  # one HBM stack, as Neuron states it
        "tensor_engine_num_rows": int(g("tensor", "rows")), "tensor_engine_num_cols": int(g("tensor", "cols")),
        "tensor_engine_clock_freq": float(g("tensor", "clock_ghz")),
        "vector_engine_clock_freq": float(g("vector", "clock_ghz")),
        "vector_engine_num_channels": int(g("sbuf", "partitions")),
        "scalar_engine_clock_freq": float(g("scalar", "clock_ghz")),
        "scalar_engine_num_channels": int(g("sbuf", "partitions")),
        "gpsimd_engine_clock_freq": float(g("gpsimd", "clock_ghz")),
        "gpsimd_engine_num_channels": int(g("sbuf", "partitions")),
        "neuroncore_clock_freq": float(g("tensor", "clock_ghz")), "ticks_per_nanosec": 1,
        "instance_type": str(hw.get("name", "")), "neuroncore_idx": max(c.lcore, 0), "neuron_device_idx": chip,
        "profile_name": str(trace.workload.get("name", trace.path.name)),
        "is_simulation": bool(sim.get("is_simulation", True)) if isinstance(sim, dict) else True,
        "trnx_hardware": json.dumps(hw, sort_keys=True), "trnx_workload": json.dumps(trace.workload, sort_keys=True, default=str),
        "trnx_chip": chip, "trnx_lcore": c.lcore,
    }.items()}


def _dig(d: Any, keys: tuple[str, ...], default: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else default


def _unix(ns: int) -> str:
    """`YYYY-MM-DD HH:MM:SS.fffffffff+00:00` counting trace time from the Unix epoch (a simulated trace has no wall clock)."""
    import datetime as dt

    secs, frac = divmod(int(ns), 1_000_000_000)
    stamp = dt.datetime.fromtimestamp(secs, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp}.{frac:09d}+00:00"


def _trnx_tracks(c: _Chip, ctx: _Context) -> list[tuple[NS.Table, dict[str, Any]]]:
    """Our extension tables: the profile's rows (physical cores as in the trace), its counter samples and its
    runtime intervals, exactly."""
    ids = c.track_ids
    row_of = np.full(len(ctx.tracks["chip"]), -1, np.int64)
    row_of[ids] = np.arange(len(ids))
    tracks = {"core": ctx.tracks["core"][ids].astype(np.int64), "lcore": ctx.tracks["lcore"][ids].astype(np.int64),
              "kind": ctx.tracks["kind"][ids].astype(object),
              "name": ctx.tracks["name"][ids].astype(object), "unit": ctx.tracks["unit"][ids].astype(object)}
    t = c.ctr
    counters = {"track_idx": row_of[num(t, "track_id").astype(np.int64)] if t.num_rows else np.zeros(0, np.int64),
                "time_ns": num(t, "time_ns").astype(np.int64), "value": num(t, "value").astype(np.float64)}
    r = c.runtime
    runtime = {"track_idx": row_of[num(r, "track_id").astype(np.int64)] if r.num_rows else np.zeros(0, np.int64),
               "start_ts": num(r, "start_ns").astype(np.int64), "duration_ns": num(r, "dur_ns").astype(np.int64),
               "opcode": r.column("opcode").cast(pa.string()).combine_chunks() if r.num_rows else pa.array([], pa.string())}
    return [(NS.TRNX_TRACKS, tracks), (NS.TRNX_COUNTERS, counters), (NS.TRNX_RUNTIME, runtime)]


def _schema_fields(written: list[str]) -> dict[str, Any]:
    cols: dict[str, list[Any]] = {f.name: [] for f in NS.SCHEMA_FIELDS.fields}
    for name in written:
        spec = NS.TABLES[name]
        for f in spec.fields:
            ftype, fmt = NS.SCHEMA_TYPE[f.type]
            for k, v in (("table_name", name), ("table_description", spec.doc), ("field_name", f.name),
                         ("field_description", f.doc), ("field_type", ftype), ("field_required", f.required),
                         ("field_format", fmt or None), ("field_unit", f.unit or None)):
                cols[k].append(v)
    return cols


def _units(ctx: _Context, chips: list[int]) -> list[tuple[int, int]]:
    """(chip, logical core) of each profile: every logical core of a chip whose rows carry one (a capture of
    ranks), else the whole chip (-1, a chip-wide program)."""
    out: list[tuple[int, int]] = []
    for chip in chips:
        lcores = sorted(set(ctx.tracks["lcore"][(ctx.tracks["chip"] == chip) & (ctx.tracks["lcore"] >= 0)].tolist()))
        out += [(chip, int(lc)) for lc in lcores] or [(chip, -1)]
    return out


def _export_chip(trace: Trace, chip: int, ctx: _Context, d: Path, lcore: int = -1, shared: bool = True) -> tuple[int, int]:
    """One profile directory (a logical core, or a chip when `lcore` is -1); (rows written, flows dropped for
    crossing profiles)."""
    c = _Chip(trace, chip, ctx, lcore, shared)
    span = trace.span_ns
    framework, hlo, penguin, kernel_op = _hierarchy(c, ctx)
    ins = _instructions(c, ctx, kernel_op)
    agg, packets = _dma(c, ctx)
    flows, dropped = _flows(trace, ins["id"], agg["id"])
    tables: list[tuple[NS.Table, dict[str, Any]]] = [
        (NS.INSTRUCTION, ins), (NS.DMA_AGGREGATED, agg), (NS.DMA_PACKET, packets), (NS.FLOW, flows),
        (NS.CC_OP, _collectives(trace, c, ctx)), (NS.ACTIVE_TIME, _active_time(ins)),
        (NS.OPCODE_SUMMARY, _opcode_summary(ins, span[1] - span[0])),
        (NS.FRAMEWORK_INSTRUCTION, framework), (NS.HLO_INSTRUCTION, hlo), (NS.PENGUIN_INSTRUCTION, penguin),
    ]
    for name, cols in _counters(c, ctx, trace.hardware, span).items():
        tables.append((NS.TABLES[name], cols))
    tables += [(NS.SUMMARY, _summary(trace, c, ctx)), (NS.METADATA, _metadata(trace, c, ctx, span)),
               *_trnx_tracks(c, ctx)]
    rows = 0
    for spec, cols in tables:
        rows += _write(d, spec, cols)
    _write(d, NS.SCHEMA_FIELDS, _schema_fields([s.name for s, _ in tables] + ["SchemaFields"]))
    return rows, dropped


def export_neuron_explorer(trace: Trace, out: Path, options: dict[str, Any]) -> int:
    """Write `out` (a new directory): one Neuron Explorer profile per logical core of the trace (per chip for a
    chip-wide program)."""
    out = Path(out)
    check_not_in_trace(out)
    if out.exists() or out.is_symlink():
        raise UserError(f"{out} already exists; a Neuron Explorer profile is written into a new directory, choose another name.")
    if not out.parent.is_dir():
        raise UserError(f"cannot write {out}: directory {out.parent} does not exist.")
    scope = export_scope(trace, options)
    if (scope.t0, scope.t1, scope.cores, scope.track_ids) != (None, None, None, None):
        raise UserError("a Neuron Explorer profile holds whole chips: --range, --cores and --tracks do not apply to it "
                        "(--chips does).")
    ctx = _Context(trace)
    chips = sorted(set(ctx.tracks["chip"][ctx.tracks["chip"] >= 0].tolist()))
    if scope.chips is not None:
        chips = [c for c in chips if c in scope.chips]
    if not chips:
        raise UserError(f"{trace.path} has no chip to export.")
    clean_stale(out.parent)
    tmp = sibling(out)
    try:
        tmp.mkdir()
        rows = 0
        units = _units(ctx, chips)
        seen: set[int] = set()
        for chip, lcore in units:
            rank = chip * ctx.ranks_per_chip + lcore if lcore >= 0 else chip
            d = tmp if len(units) == 1 else tmp / f"rank_{rank}"
            d.mkdir(exist_ok=True)
            n, _ = _export_chip(trace, chip, ctx, d, lcore, shared=chip not in seen)
            seen.add(chip)
            rows += n
        try:
            rename_noreplace(tmp, out)
        except FileExistsError:
            raise UserError(f"{out} appeared while exporting; it was left alone and nothing was written.") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rows
