"""Ranks' `RankEvents` -> the trnx tables, a whole column at a time.

Per rank: each GPU becomes a core, each (GPU, stream) a `kernel` track (and a
`dma_queue` track for its copies), CPU ops nest per thread under their ProfilerStep,
kernels find their op through the External id, and NCCL kernels are collected for
cross-rank matching (kineto.collectives). Strings travel as (codes, vocabulary) pairs:
per-rank vocabularies are merged once per table, in order of first appearance, so the
written dictionaries do not depend on which reader produced the events.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from simcore.errors import UserError
from simcore.trace import TraceWriter
from simcore.trace.semantics import MAX_ABS_TIME_NS
from explorer.interop.kineto import collectives as KC
from explorer.interop.kineto.events import RankEvents, dur_ns, to_ns
from explorer.interop.kineto.hta import counted, id_ranges
from explorer.interop.kineto.nesting import _nesting_parents_loop, nesting_parents
from explorer.interop.kineto.schema import args_dict

_STEP = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
MEMORY_COUNTER = "Device Memory Allocated"  # bytes, per GPU (core), from profile_memory samples
Strings = tuple[np.ndarray, list[str]]  # (codes, vocabulary)


def _norm(value: Any) -> int | str:
    """A device or stream id: an int when it is one (also when written as a string)."""
    if type(value) is int:
        return value
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() and len(text) < 18 else text


def _sort_key(value: int | str) -> tuple[int, int, str]:
    return (0, value, "") if type(value) is int else (1, 0, str(value))


def _copy_ends(name: str) -> tuple[str, str]:
    """Source and destination memory of a CUDA copy from its name."""
    low = name.lower()
    if "memset" in low:
        return "", "hbm"
    for tag, ends in (("htod", ("host", "hbm")), ("dtoh", ("hbm", "host")), ("dtod", ("hbm", "hbm")),
                      ("ptop", ("hbm", "remote")), ("htoh", ("host", "host"))):
        if tag in low:
            return ends
    return "hbm", "hbm"


def _strings(values: list[str]) -> Strings:
    return np.arange(len(values), dtype=np.int64), list(values)


def _first_appearance(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes renumbered in order of first appearance, and the old code of each new one."""
    used, first = np.unique(codes, return_index=True)
    old = used[np.argsort(first, kind="stable")]
    new = np.zeros(int(used.max()) + 1 if len(used) else 1, dtype=np.int64)
    new[old] = np.arange(len(old))
    return new[codes], old


def merge_strings(parts: list[Strings]) -> Strings:
    """(codes, vocabulary) pairs -> one pair whose vocabulary is in order of first appearance."""
    merged: dict[str, int] = {}
    chunks = []
    for codes, vocab in parts:
        remap = np.fromiter((merged.setdefault(v, len(merged)) for v in vocab), dtype=np.int64, count=len(vocab))
        chunks.append(remap[codes] if len(codes) else np.zeros(0, dtype=np.int64))
    allc = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    names = list(merged)
    codes, old = _first_appearance(allc)
    return codes, [names[i] for i in old.tolist()]


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if not parts:
        return {}
    out: dict[str, Any] = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if isinstance(vals[0], tuple):
            out[key] = merge_strings(vals)
        elif np.isscalar(vals[0]) or isinstance(vals[0], str):
            out[key] = vals[0]
        else:
            out[key] = np.concatenate(vals)
    return out


def _take(v: Any, order: np.ndarray) -> Any:
    return [v[i] for i in order] if isinstance(v, list) else np.asarray(v)[order]


class Builder:
    """Accumulates every table's columns over ranks, then writes them."""

    def __init__(self, t0_us: float) -> None:
        self.t0 = t0_us
        self.tracks: dict[str, list[Any]] = {k: [] for k in ("track_id", "chip", "core", "kind", "name", "unit")}
        self.kernels: list[dict[str, Any]] = []
        self.dma: list[dict[str, Any]] = []
        self.counters: list[dict[str, Any]] = []
        self.comm: list[KC.CommKernel] = []
        self.comm_track: dict[int, int] = {}
        self.ops: list[dict[str, Any]] = []  # chunks of the ops table after the root (op_id 0)
        self.n_ops = 1
        self.kernel_base = 0
        self.cores_per_chip = 0
        # per kernel / dma chunk, in row order: what HTA's selection needs (kineto.hta)
        self.hta_rows: dict[str, list[tuple[np.ndarray, np.ndarray, float]]] = {"kernels": [], "dma": []}
        self.last_step: dict[int, float] = {}

    def track(self, chip: int, core: int, kind: str, name: str) -> int:
        tid = len(self.tracks["track_id"])
        for k, v in (("track_id", tid), ("chip", chip), ("core", core), ("kind", kind), ("name", name), ("unit", "")):
            self.tracks[k].append(v)
        return tid

    # -- one rank ----------------------------------------------------------------
    def add_rank(self, rank: int, ev: RankEvents) -> None:
        places = [(_norm(a), _norm(b)) for a, b in ev.places]  # normalised once per distinct place
        gpu = np.unique(np.concatenate([ev.kernels.place, ev.copies.place]))
        devices = sorted({places[p][0] for p in gpu.tolist()} | set(ev.memory[1]), key=_sort_key)
        self.cores_per_chip = max(self.cores_per_chip, len(devices))
        core_of = {d: i for i, d in enumerate(devices)}
        op_of_ext = self._ops(rank, ev)
        self.last_step[rank] = ev.last_step_us
        self._kernels(rank, ev, places, core_of, op_of_ext)
        self._copies(rank, ev, places, core_of)
        self._memory(rank, ev, core_of)

    def _memory(self, rank: int, ev: RankEvents, core_of: dict[Any, int]) -> None:
        """Allocator samples -> a `Device Memory Allocated` counter (bytes) per GPU."""
        ts, device, total = ev.memory
        if not ts:
            return
        track_of = {d: self.track(rank, core_of[d], "counter", MEMORY_COUNTER) for d in sorted(set(device))}
        for t in track_of.values():
            self.tracks["unit"][t] = "bytes"
        track = np.array([track_of[d] for d in device], dtype=np.int32)
        time = to_ns(ts, self.t0)
        order = np.lexsort((time, track))
        self.counters.append({"track_id": track[order], "time_ns": time[order], "value": np.asarray(total, dtype=np.float64)[order]})

    def _stream_tracks(self, rank: int, place: np.ndarray, places: list[tuple[Any, Any]], core_of: dict[Any, int],
                       kind: str, suffix: str) -> np.ndarray:
        """One track per (device, stream) the rows use; each row's track."""
        used = np.unique(place).tolist()
        keys = sorted({places[p] for p in used}, key=lambda w: (_sort_key(w[0]), _sort_key(w[1])))
        multi = len(core_of) > 1
        ids = {}
        for dev, stream in keys:
            label = f"GPU {dev} stream {stream}" if multi else f"stream {stream}"
            ids[(dev, stream)] = self.track(rank, core_of[dev], kind, label + suffix)
        track_of = np.zeros(len(places), dtype=np.int32)
        for p in used:
            track_of[p] = ids[places[p]]
        return track_of[place]

    def _kernels(self, rank: int, ev: RankEvents, places: list[tuple[Any, Any]], core_of: dict[Any, int],
                 op_of_ext: np.ndarray) -> None:
        k = ev.kernels
        if not len(k):
            return
        track = self._stream_tracks(rank, k.place, places, core_of, "kernel", "")
        start = to_ns(k.ts, self.t0)
        dur = dur_ns(k.dur)
        core_of_place = np.array([core_of.get(p[0], 0) for p in places], dtype=np.int32)
        core = core_of_place[k.place]
        op = np.where(k.ext >= 0, op_of_ext[np.maximum(k.ext, 0)], -1)
        order = np.lexsort((start, track))
        n = len(order)
        names = k.name[order]
        self.hta_rows["kernels"].append((k.stream[order], k.launch[order], ev.last_step_us))
        self.kernels.append({
            "kernel_id": self.kernel_base + np.arange(n, dtype=np.int64), "track_id": track[order],
            "chip": np.full(n, rank, dtype=np.int32), "core": core[order], "op_id": op[order], "name": (names, ev.names),
            "start_ns": start[order], "dur_ns": dur[order], "flops": 0, "model_flops": 0, "hbm_read_bytes": 0,
            "hbm_write_bytes": 0, "dtype": "",
        })
        comm = np.flatnonzero(ev.name_is_comm[names])
        for j, i in zip(comm.tolist(), order[comm].tolist()):
            args = k.args.get(i)
            if (args is None or "Collective name" not in args) and int(k.ext[i]) in ev.comm_args:
                # older PyTorch: the collective's arguments are on its record_param_comms op
                args = {**args_dict(ev.comm_args[int(k.ext[i])]), **args_dict(args or {})}
            self.comm.append(KC.CommKernel(rank, int(start[i]), int(start[i] + dur[i]), ev.names[names[j]],
                                           {} if args is None else args, int(op[i])))
        if len(comm) and rank not in self.comm_track:
            self.comm_track[rank] = self.track(rank, -1, "cc", "NCCL")
        self.kernel_base += n

    def _copies(self, rank: int, ev: RankEvents, places: list[tuple[Any, Any]], core_of: dict[Any, int]) -> None:
        c = ev.copies
        if not len(c):
            return
        track = self._stream_tracks(rank, c.place, places, core_of, "dma_queue", " copies")
        start = to_ns(c.ts, self.t0)
        order = np.lexsort((start, track))
        ends = [_copy_ends(name) for name in ev.names]
        memories = ["host", "hbm", "remote", ""]
        src = np.array([memories.index(e[0]) for e in ends], dtype=np.int64)
        dst = np.array([memories.index(e[1]) for e in ends], dtype=np.int64)
        names = c.name[order]
        self.hta_rows["dma"].append((c.stream[order], c.launch[order], ev.last_step_us))
        self.dma.append({
            "track_id": track[order], "start_ns": start[order], "dur_ns": dur_ns(c.dur)[order],
            "bytes": np.maximum(c.nbytes[order], 0), "partitions": np.zeros(len(order), dtype=np.int32),
            "src": (src[names], memories), "dst": (dst[names], memories), "kernel_id": np.full(len(order), -1, dtype=np.int64),
        })

    def _add_ops(self, parent: Any, level: str, names: Strings, kinds: Strings, start: np.ndarray, dur: np.ndarray) -> int:
        """A chunk of op rows (ids from the running count); the first id."""
        base = self.n_ops
        n = len(start)
        self.ops.append({"op_id": base + np.arange(n, dtype=np.int64), "parent_id": np.asarray(parent, dtype=np.int64),
                         "level": (np.zeros(n, dtype=np.int64), [level]), "name": names, "kind": kinds,
                         "start_ns": np.asarray(start, dtype=np.int64), "dur_ns": np.asarray(dur, dtype=np.int64)})
        self.n_ops += n
        return base

    def _ops(self, rank: int, ev: RankEvents) -> np.ndarray:
        """CPU ops nested per thread, ProfilerSteps as layers; op_id per External id code."""
        op_of_ext = np.full(ev.n_ext + 1, -1, dtype=np.int64)
        o = ev.cpu_ops
        if not len(o):
            return op_of_ext
        start = to_ns(o.ts, self.t0)
        end = start + dur_ns(o.dur)
        thread, _ = _first_appearance(o.place)  # threads numbered in order of first appearance
        is_step = np.array([_STEP.match(n) is not None for n in ev.names] or [False], dtype=bool)[o.name]
        # steps first (they parent everything in their time range), then every thread by time
        steps = np.flatnonzero(is_step)
        steps = steps[np.argsort(start[steps], kind="stable")]
        step_start, step_end = start[steps], end[steps]
        if len(steps):
            labels = [f"rank {rank} {ev.names[c]}" for c in o.name[steps].tolist()]
            first_step = self._add_ops(np.zeros(len(steps)), "layer", _strings(labels),
                                       (np.zeros(len(steps), dtype=np.int64), ["profiler_step"]), step_start, step_end - step_start)
            step_ids = first_step + np.arange(len(steps), dtype=np.int64)
        rest = np.flatnonzero(~is_step)
        order = rest[np.lexsort((-end[rest], start[rest], thread[rest]))]
        th, st, en = thread[order], start[order], end[order]
        local = nesting_parents(th, st, en)
        if local is None:
            local = _nesting_parents_loop(th.tolist(), st.tolist(), en.tolist())
        base = self.n_ops
        top = local < 0
        parent = np.where(top, 0, base + local)
        if top.any() and len(steps):
            k = np.searchsorted(step_start, st[top], side="right") - 1
            kc = np.maximum(k, 0)
            inside = (k >= 0) & (step_end[kc] >= en[top])
            parent[top] = np.where(inside, step_ids[kc], 0)
        # kind: the category, or for ops with collective args the collective's kind
        kinds = [c or "cpu_op" for c in ev.cats]
        kind = o.cat[order].copy()
        if o.args:
            pos = np.full(len(o), -1, dtype=np.int64)  # steps keep their own kind
            pos[order] = np.arange(len(order))
            coll: dict[str, int] = {}
            for i, a in o.args.items():
                if pos[i] >= 0:
                    kind[pos[i]] = len(kinds) + coll.setdefault(KC.collective_kind(str(a.get("Collective name", ""))), len(coll))
            kinds += list(coll)
        self._add_ops(parent, "op", (o.name[order], ev.names), (kind, kinds), st, en - st)
        ext = o.ext[order]
        has = ext >= 0
        np.maximum.at(op_of_ext, ext[has], base + np.flatnonzero(has))  # the last op with an id wins
        return op_of_ext

    def _span(self, kernels: dict[str, Any], dma: dict[str, Any]) -> tuple[int, int]:
        """First start and last end over everything imported (the root op's extent)."""
        starts = [c["start_ns"] for c in self.ops]
        ends = [c["start_ns"] + c["dur_ns"] for c in self.ops]
        for t in (kernels, dma):
            if t:
                starts.append(t["start_ns"])
                ends.append(t["start_ns"] + t["dur_ns"])
        if not starts:
            return 0, 0
        s, e = np.concatenate(starts), np.concatenate(ends)
        return (int(s.min()), int(e.max())) if len(s) else (0, 0)

    def hta_excluded(self, drop_last_step: bool) -> dict[str, list[list[int]]]:
        """The kernel and dma ids HTA 0.5.0 leaves out of its analysis, as [start, end) id runs
        (kineto.hta): no stream, or, with `drop_last_step`, launched in or after the last
        profiler step. Ids as `write` assigns them (dma ids follow the kernels')."""
        out = {}
        for table, base in (("kernels", 0), ("dma", self.kernel_base)):
            chunks = self.hta_rows[table]
            if not chunks:
                out[table] = []
                continue
            keep = np.concatenate([counted(st, la, last, drop_last_step) for st, la, last in chunks])
            out[table] = id_ranges(base + np.arange(len(keep), dtype=np.int64), ~keep)
        return out

    # -- write -------------------------------------------------------------------
    def write(self, out: Path, meta: dict[str, Any], overwrite: bool, root_name: str) -> dict[str, int]:
        kernels = _concat(self.kernels)
        dma = _concat(self.dma)
        with TraceWriter(out, meta, overwrite=overwrite) as w:
            w.write("tracks", self.tracks)
            if kernels:
                w.write("kernels", kernels)
                w.write("instructions", {
                    "id": kernels["kernel_id"], "track_id": kernels["track_id"], "start_ns": kernels["start_ns"],
                    "dur_ns": kernels["dur_ns"], "opcode": kernels["name"], "kernel_id": kernels["kernel_id"],
                    "flops": 0, "bytes": 0, "dtype": "",
                })
            if dma:
                dma["id"] = self.kernel_base + np.arange(len(dma["start_ns"]), dtype=np.int64)
                w.write("dma", dma)
            if self.comm:
                cols = KC.match(self.comm)
                cols["track_id"] = np.array([self.comm_track[int(c)] for c in cols["chip"]], dtype=np.int32)
                order = np.lexsort((cols["arrive_ns"], cols["track_id"]))
                w.write("collectives", {k: _take(v, order) for k, v in cols.items()})
            lo, hi = self._span(kernels, dma)
            counters = _concat(self.counters)
            times = [lo, hi, *(f(counters["time_ns"]) for f in (np.min, np.max) if counters)]
            if min(times) < -MAX_ABS_TIME_NS or max(times) > MAX_ABS_TIME_NS:
                raise UserError(
                    f"the profile's events span {(max(times) - min(times)) / 1e9 / 86400 / 365.25:,.0f} years, more than "
                    "a trace holds (2^61 ns, 73 years, either side of its start): a timestamp is damaged or the ranks' clocks disagree."
                )
            root = {"op_id": np.zeros(1, dtype=np.int64), "parent_id": np.full(1, -1, dtype=np.int64),
                    "level": _strings(["model"]), "name": _strings([root_name]), "kind": _strings(["model"]),
                    "start_ns": np.array([lo], dtype=np.int64), "dur_ns": np.array([hi - lo], dtype=np.int64)}
            w.write("ops", _concat([root, *self.ops]))
            if counters:
                w.write("counters", counters)
        return {"kernels": len(kernels.get("kernel_id", ())), "dma": len(dma.get("start_ns", ())),
                "collectives": len(self.comm), "ops": self.n_ops, "tracks": len(self.tracks["track_id"]),
                "counters": sum(len(c["time_ns"]) for c in self.counters)}
