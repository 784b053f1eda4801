"""PyTorch-profiler (Kineto) traces of one or many ranks -> one trnx trace.

Mapping (docs/interop.md has the full table):
- rank -> chip; each GPU of a rank -> a core; each CUDA stream -> a `kernel` track
  whose kernels land in `kernels` (and, one-to-one, in `instructions`, so engine
  views show them too);
- memcpy/memset -> `dma` rows on one `dma_queue` track per stream;
- NCCL/RCCL kernels -> also `collectives` rows on the rank's `cc` track, matched
  across ranks (kineto_collectives);
- `ProfilerStep#N` -> `layer` rows, `cpu_op`/`user_annotation` -> nested `op` rows,
  linked to kernels through the profiler's External id.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simcore.errors import UserError
from simcore.trace import TraceWriter
from explorer.interop import kineto_collectives as KC
from explorer.interop.kineto_events import RankEvents, dur_ns, extract, is_comm_kernel, to_ns
from explorer.interop.kineto_json import KinetoFile, load_kineto

_RANK_IN_NAME = re.compile(r"rank[\s_\-.]*(\d+)", re.I)
_STEP = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
SOURCE = "kineto"


@dataclass
class ImportReport:
    """What an import did, for the CLI to print and tests to check."""

    path: Path
    ranks: list[int]
    rows: dict[str, int]
    skipped_events: int
    repairs: dict[str, str] = field(default_factory=dict)  # file -> how it was repaired


def rank_of(kf: KinetoFile) -> int | None:
    """The rank from `distributedInfo`, else from a `rank<N>` in the file name."""
    info = kf.header.get("distributedInfo")
    if isinstance(info, dict):
        r = info.get("rank")
        if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 1 << 20:
            return r
        if isinstance(r, str) and r.isdigit() and int(r) < 1 << 20:
            return int(r)
    m = _RANK_IN_NAME.search(kf.path.name)
    if m and int(m.group(1)) < 1 << 20:
        return int(m.group(1))
    return None


def _assign_ranks(files: list[KinetoFile]) -> list[int]:
    ranks = [rank_of(f) for f in files]
    if len(files) == 1 and ranks[0] is None:
        return [0]
    for f, r in zip(files, ranks):
        if r is None:
            raise UserError(
                f"cannot tell the rank of {f.path}: it has no distributedInfo and its name has no 'rank<N>'."
            )
    seen: dict[int, Path] = {}
    for f, r in zip(files, ranks):
        if r in seen:
            raise UserError(f"{seen[r]} and {f.path} are both rank {r}; import each rank once.")
        seen[r] = f.path
    return [int(r) for r in ranks]  # type: ignore[arg-type]


def _sort_key(value: str) -> tuple[int, Any]:
    return (0, int(value)) if value.lstrip("-").isdigit() else (1, value)


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


class _Builder:
    """Accumulates every table's columns over ranks, then writes them."""

    def __init__(self, t0_us: float) -> None:
        self.t0 = t0_us
        self.tracks: dict[str, list[Any]] = {k: [] for k in ("track_id", "chip", "core", "kind", "name", "unit")}
        self.kernels: list[dict[str, Any]] = []
        self.dma: list[dict[str, Any]] = []
        self.comm: list[KC.CommKernel] = []
        self.comm_track: dict[int, int] = {}
        self.ops: dict[str, list[Any]] = {k: [] for k in ("op_id", "parent_id", "level", "name", "kind", "start_ns", "dur_ns")}
        self.kernel_base = 0
        self.cores_per_chip = 0
        self.devices: dict[int, list[str]] = {}
        self._add_op(-1, "model", "imported profile", "model", 0, 0)  # root; span fixed at the end

    def track(self, chip: int, core: int, kind: str, name: str) -> int:
        tid = len(self.tracks["track_id"])
        for k, v in (("track_id", tid), ("chip", chip), ("core", core), ("kind", kind), ("name", name), ("unit", "")):
            self.tracks[k].append(v)
        return tid

    def _add_op(self, parent: int, level: str, name: str, kind: str, start: int, dur: int) -> int:
        oid = len(self.ops["op_id"])
        for k, v in zip(self.ops, (oid, parent, level, name, kind, start, dur)):
            self.ops[k].append(v)
        return oid

    # -- one rank ----------------------------------------------------------------
    def add_rank(self, rank: int, ev: RankEvents) -> None:
        devices = sorted({w[0] for w in ev.kernels.where} | {w[0] for w in ev.copies.where}, key=_sort_key)
        self.devices[rank] = devices
        core_of = {d: i for i, d in enumerate(devices)}
        self.cores_per_chip = max(self.cores_per_chip, len(devices))
        ext_to_op = self._ops(rank, ev)
        self._kernels(rank, ev, core_of, ext_to_op)
        self._copies(rank, ev, core_of)

    def _stream_tracks(self, rank: int, where: list[tuple[str, str]], core_of: dict[str, int], kind: str, suffix: str) -> np.ndarray:
        keys = sorted(set(where), key=lambda w: (_sort_key(w[0]), _sort_key(w[1])))
        multi = len(core_of) > 1
        ids = {}
        for dev, stream in keys:
            label = f"GPU {dev} stream {stream}" if multi else f"stream {stream}"
            ids[(dev, stream)] = self.track(rank, core_of[dev], kind, label + suffix)
        return np.array([ids[w] for w in where], dtype=np.int32)

    def _kernels(self, rank: int, ev: RankEvents, core_of: dict[str, int], ext_to_op: dict[str, int]) -> None:
        k = ev.kernels
        if not len(k):
            return
        track = self._stream_tracks(rank, k.where, core_of, "kernel", "")
        start = to_ns(k.ts, self.t0)
        dur = dur_ns(k.dur)
        core = np.array([core_of[w[0]] for w in k.where], dtype=np.int32)
        op = np.array([ext_to_op.get(str(x), -1) if x is not None else -1 for x in k.ext], dtype=np.int64)
        order = np.lexsort((start, track))
        n = len(order)
        ids = self.kernel_base + np.arange(n, dtype=np.int64)
        names = [k.name[i] for i in order]
        self.kernels.append({
            "kernel_id": ids, "track_id": track[order], "chip": np.full(n, rank, dtype=np.int32),
            "core": core[order], "op_id": op[order], "name": names, "start_ns": start[order],
            "dur_ns": dur[order], "flops": 0, "model_flops": 0, "hbm_read_bytes": 0, "hbm_write_bytes": 0, "dtype": "",
        })
        comm = [j for j, i in enumerate(order) if is_comm_kernel(names[j])]
        for j in comm:
            i = order[j]
            args = k.args[i] or {}
            if "Collective name" not in args and k.ext[i] is not None:
                args = {**ev.comm_args.get(str(k.ext[i]), {}), **args}
            self.comm.append(KC.CommKernel(rank, int(start[i]), int(start[i] + dur[i]), names[j], args, int(op[i])))
        if comm and rank not in self.comm_track:
            self.comm_track[rank] = self.track(rank, -1, "cc", "NCCL")
        self.kernel_base += n

    def _copies(self, rank: int, ev: RankEvents, core_of: dict[str, int]) -> None:
        c = ev.copies
        if not len(c):
            return
        track = self._stream_tracks(rank, c.where, core_of, "dma_queue", " copies")
        start = to_ns(c.ts, self.t0)
        order = np.lexsort((start, track))
        ends = [_copy_ends(c.name[i]) for i in order]
        nbytes = np.array([KC._int((c.args[i] or {}).get("bytes"), 0) for i in order], dtype=np.int64)
        self.dma.append({
            "track_id": track[order], "start_ns": start[order], "dur_ns": dur_ns(c.dur)[order],
            "bytes": np.maximum(nbytes, 0), "partitions": np.zeros(len(order), dtype=np.int32),
            "src": [e[0] for e in ends], "dst": [e[1] for e in ends], "kernel_id": np.full(len(order), -1, dtype=np.int64),
        })

    def _ops(self, rank: int, ev: RankEvents) -> dict[str, int]:
        """CPU ops nested per thread, ProfilerSteps as layers; External id -> op_id."""
        o = ev.cpu_ops
        if not len(o):
            return {}
        start = to_ns(o.ts, self.t0)
        end = start + dur_ns(o.dur)
        thread_code: dict[tuple[str, str], int] = {}
        thread = np.array([thread_code.setdefault(w, len(thread_code)) for w in o.where], dtype=np.int64)
        is_step = np.array([_STEP.match(n) is not None for n in o.name], dtype=bool)
        # steps first (they parent everything in their time range), then every thread by time
        steps = np.flatnonzero(is_step)
        steps = steps[np.argsort(start[steps], kind="stable")]
        step_ids = np.array(
            [self._add_op(0, "layer", f"rank {rank} {o.name[i]}", "profiler_step", int(start[i]), int(end[i] - start[i]))
             for i in steps], dtype=np.int64)
        step_start, step_end = start[steps], end[steps]
        ext_to_op: dict[str, int] = {}
        rest = np.flatnonzero(~is_step)
        order = rest[np.lexsort((-end[rest], start[rest], thread[rest]))]
        stack: list[tuple[int, int]] = []  # (end, op_id) of the open ops of the current thread
        current = -1
        for i in order.tolist():
            if thread[i] != current:
                current, stack = thread[i], []
            s, e = int(start[i]), int(end[i])
            while stack and stack[-1][0] <= s and not (stack[-1][0] == s == e):
                stack.pop()
            while stack and stack[-1][0] < e:  # not properly nested (clock rounding): treat as sibling
                stack.pop()
            if stack:
                parent = stack[-1][1]
            else:
                j = int(np.searchsorted(step_start, s, side="right")) - 1
                parent = int(step_ids[j]) if j >= 0 and step_end[j] >= e else 0
            kind = o.cat[i] or "cpu_op"
            if o.args[i] is not None:
                kind = KC.collective_kind(str(o.args[i].get("Collective name", "")))
            oid = self._add_op(parent, "op", o.name[i], kind, s, e - s)
            stack.append((e, oid))
            if o.ext[i] is not None:
                ext_to_op[str(o.ext[i])] = oid
        return ext_to_op

    def _span(self, kernels: dict[str, Any], dma: dict[str, Any]) -> tuple[int, int]:
        """First start and last end over everything imported (the root op's extent)."""
        starts = [np.asarray(self.ops["start_ns"][1:], dtype=np.int64)]
        ends = [starts[0] + np.asarray(self.ops["dur_ns"][1:], dtype=np.int64)]
        for t in (kernels, dma):
            if t:
                starts.append(t["start_ns"])
                ends.append(t["start_ns"] + t["dur_ns"])
        s, e = np.concatenate(starts), np.concatenate(ends)
        return (int(s.min()), int(e.max())) if len(s) else (0, 0)

    # -- write -------------------------------------------------------------------
    def write(self, out: Path, meta: dict[str, Any], overwrite: bool) -> dict[str, int]:
        kernels = _concat(self.kernels)
        with TraceWriter(out, meta, overwrite=overwrite) as w:
            w.write("tracks", self.tracks)
            if kernels:
                w.write("kernels", kernels)
                w.write("instructions", {
                    "id": kernels["kernel_id"], "track_id": kernels["track_id"], "start_ns": kernels["start_ns"],
                    "dur_ns": kernels["dur_ns"], "opcode": kernels["name"], "kernel_id": kernels["kernel_id"],
                    "flops": 0, "bytes": 0, "dtype": "",
                })
            dma = _concat(self.dma)
            if dma:
                dma["id"] = self.kernel_base + np.arange(len(dma["start_ns"]), dtype=np.int64)
                w.write("dma", dma)
            if self.comm:
                cols = KC.match(self.comm)
                cols["track_id"] = np.array([self.comm_track[int(c)] for c in cols["chip"]], dtype=np.int32)
                order = np.lexsort((cols["arrive_ns"], cols["track_id"]))
                w.write("collectives", {k: _take(v, order) for k, v in cols.items()})
            lo, hi = self._span(kernels, dma)
            self.ops["start_ns"][0] = lo
            self.ops["dur_ns"][0] = hi - lo
            w.write("ops", self.ops)
        return {"kernels": len(kernels.get("kernel_id", ())), "dma": len(dma.get("start_ns", ())),
                "collectives": len(self.comm), "ops": len(self.ops["op_id"]), "tracks": len(self.tracks["track_id"])}


def _take(v: Any, order: np.ndarray) -> Any:
    return [v[i] for i in order] if isinstance(v, list) else np.asarray(v)[order]


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if not parts:
        return {}
    out: dict[str, Any] = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if isinstance(vals[0], list):
            out[key] = [x for v in vals for x in v]
        elif np.isscalar(vals[0]) or isinstance(vals[0], str):
            out[key] = vals[0]
        else:
            out[key] = np.concatenate(vals)
    return out


def _hardware(files: list[KinetoFile], ranks: list[int], cores: int) -> dict[str, Any]:
    props = next((f.header.get("deviceProperties") for f in files if isinstance(f.header.get("deviceProperties"), list)), None)
    hw: dict[str, Any] = {"name": "gpu", "chips": len(ranks), "cores_per_chip": max(cores, 1)}
    if props and isinstance(props[0], dict):
        d = props[0]
        if isinstance(d.get("name"), str):
            hw["device"] = d["name"]
        mem = d.get("totalGlobalMem")
        if isinstance(mem, int) and mem > 0:
            hw["hbm"] = {"capacity_bytes": mem}
    return hw


def import_kineto(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    include_python: bool = False,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import Kineto trace files (one per rank) into the trace directory `out`."""
    if not paths:
        raise UserError("name at least one Kineto trace file to import.")
    files = []
    for p in paths:
        if progress:
            progress(f"reading {p}")
        files.append(load_kineto(p))
    ranks = _assign_ranks(files)
    extracted = [extract(f.events, include_python=include_python) for f in files]
    for f in files:
        f.events = []  # the columns hold what we need; let the parsed JSON go
    lows = [e.min_ts for e in extracted if e.min_ts is not None]
    if not lows:
        where = f"{files[0].path} holds" if len(files) == 1 else f"none of the {len(files)} files holds"
        raise UserError(f"{where} no GPU kernel, copy or CPU op event to import.")
    t0 = min(lows)
    b = _Builder(t0)
    for rank, ev in sorted(zip(ranks, extracted), key=lambda re_: re_[0]):
        b.add_rank(rank, ev)
    world = next((f.header["distributedInfo"].get("world_size") for f in files
                  if isinstance(f.header.get("distributedInfo"), dict)), None)
    meta = {
        "source": SOURCE,
        "hardware": _hardware(files, ranks, b.cores_per_chip),
        "workload": {"name": files[0].header.get("traceName") if isinstance(files[0].header.get("traceName"), str) else "pytorch-profile",
                     "kind": "profile", "ranks": sorted(ranks), "world_size": world if isinstance(world, int) else None},
        "simulator": {"name": "pytorch-profiler", "is_simulation": False},
        "capture": {"include_python": include_python, "files": [str(f.path) for f in files], "t0_us": t0},
        "import": {"skipped_events": sum(e.skipped for e in extracted),
                   "repairs": {str(f.path): f.repaired for f in files if f.repaired}},
    }
    b.ops["name"][0] = meta["workload"]["name"]
    rows = b.write(Path(out), meta, overwrite)
    return ImportReport(Path(out), sorted(ranks), rows, meta["import"]["skipped_events"], meta["import"]["repairs"])
