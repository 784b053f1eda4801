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

import gc
import multiprocessing
import os
import re
import threading
import warnings
from bisect import bisect_right
from concurrent.futures.process import BrokenProcessPool
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
from explorer.interop.kineto_schema import args_dict

_RANK_IN_NAME = re.compile(r"rank[\s_\-.]*(\d+)", re.I)
_STEP = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
SOURCE = "kineto"
MEMORY_COUNTER = "Device Memory Allocated"  # bytes, per GPU (core), from profile_memory samples


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


def nesting_parents(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """Parent index (-1 for none) of each interval, for intervals sorted by (thread, start, -end)
    that nest properly within each thread (profiler scopes do); None when they do not.

    Vectorised: an interval's depth is its position in its thread minus the intervals of
    the thread that ended by its start; its parent is the last earlier interval of the
    thread one level up. The result is checked (every parent contains its child); a
    trace whose clock rounding breaks the nesting goes to the loop instead.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    point = end <= start
    if point.any():  # zero-length scopes: nest the others, then hang each point in the innermost scope open at it
        body = np.flatnonzero(~point)
        inner = nesting_parents(thread[body], start[body], end[body])
        if inner is None:
            return None
        parent = np.full(n, -1, dtype=np.int64)
        parent[body] = np.where(inner >= 0, body[np.maximum(inner, 0)], -1)
        pts = np.flatnonzero(point)
        if len(body):
            bt, bs, be = thread[body], start[body], end[body]
            # the last body scope of the same thread starting at or before the point
            cand = np.full(len(pts), -1, dtype=np.int64)
            for t in np.unique(thread[pts]).tolist():
                rows = np.flatnonzero(bt == t)
                if not len(rows):
                    continue
                at = np.flatnonzero(thread[pts] == t)
                k = np.searchsorted(bs[rows], start[pts[at]], side="right") - 1
                cand[at] = np.where(k >= 0, rows[np.maximum(k, 0)], -1)
            # walk up while the candidate closed before the point
            for _ in range(n + 1):
                bad = (cand >= 0) & (be[np.maximum(cand, 0)] < start[pts])
                if not bad.any():
                    break
                up = inner[cand[bad]]
                cand[bad] = up
            parent[pts] = np.where(cand >= 0, body[np.maximum(cand, 0)], -1)
        return parent
    lo, hi = int(start.min()), int(end.max())
    span = hi - lo + 1
    n_threads = int(thread.max()) + 1
    if span * (n_threads + 1) >= 1 << 62:
        return None  # the thread-major key would overflow
    key_start = thread * span + (start - lo)
    key_end = np.sort(thread * span + (end - lo))
    pos = np.arange(n, dtype=np.int64)
    first = np.searchsorted(thread, thread, side="left")  # sorted by thread: index of its first row
    ended = np.searchsorted(key_end, key_start, side="right") - np.searchsorted(key_end, thread * span, side="left")
    depth = (pos - first) - ended
    if (depth < 0).any():
        return None
    levels = int(depth.max()) + 2
    code = (thread * levels + depth) * n + pos
    order = np.argsort(code, kind="stable")
    codes = code[order]
    want = (thread * levels + (depth - 1)) * n + pos
    cand = np.searchsorted(codes, want, side="left") - 1
    parent = np.full(n, -1, dtype=np.int64)
    has = depth > 0
    c = order[np.maximum(cand, 0)]
    ok = has & (cand >= 0) & (thread[c] == thread) & (depth[c] == depth - 1)
    if (has & ~ok).any():
        return None
    parent[ok] = c[ok]
    p = parent[has]
    if not ((start[p] <= start[has]) & (end[p] >= end[has])).all():
        return None
    return parent


def _nesting_parents_loop(thread: list[int], start: list[int], end: list[int]) -> np.ndarray:
    """The same with a stack, tolerating improper nesting (an overlapping scope becomes a sibling)."""
    parent = np.full(len(start), -1, dtype=np.int64)
    stack: list[int] = []
    ends: list[int] = []
    current = -1
    for j, (th, s, e) in enumerate(zip(thread, start, end)):
        if th != current:
            current, stack, ends = th, [], []
        while ends and ends[-1] <= s and not (ends[-1] == s == e):
            stack.pop()
            ends.pop()
        while ends and ends[-1] < e:
            stack.pop()
            ends.pop()
        if stack:
            parent[j] = stack[-1]
        stack.append(j)
        ends.append(e)
    return parent


class _Builder:
    """Accumulates every table's columns over ranks, then writes them."""

    def __init__(self, t0_us: float) -> None:
        self.t0 = t0_us
        self.tracks: dict[str, list[Any]] = {k: [] for k in ("track_id", "chip", "core", "kind", "name", "unit")}
        self.kernels: list[dict[str, Any]] = []
        self.dma: list[dict[str, Any]] = []
        self.counters: list[dict[str, Any]] = []
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
        for cols in (ev.kernels, ev.copies):  # normalise (device, stream) keys once per distinct key
            norm = {w: (_norm(w[0]), _norm(w[1])) for w in set(cols.where)}
            cols.where = [norm[w] for w in cols.where]
        devices = sorted({w[0] for w in ev.kernels.where} | {w[0] for w in ev.copies.where} | set(ev.memory[1]), key=_sort_key)
        self.devices[rank] = devices
        core_of = {d: i for i, d in enumerate(devices)}
        self.cores_per_chip = max(self.cores_per_chip, len(devices))
        ext_to_op = self._ops(rank, ev)
        self._kernels(rank, ev, core_of, ext_to_op)
        self._copies(rank, ev, core_of)
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
        comm_names = {n for n in set(names) if is_comm_kernel(n)}
        comm = [j for j, n in enumerate(names) if n in comm_names]
        for j in comm:
            i = order[j]
            args = args_dict(k.args[i] or {})
            if "Collective name" not in args and k.ext[i] is not None:
                args = {**args_dict(ev.comm_args.get(str(k.ext[i]), {})), **args}
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
        thread_code: dict[Any, int] = {}
        thread = np.array([thread_code.setdefault(w, len(thread_code)) for w in o.where], dtype=np.int64)
        step_names = {n for n in set(o.name) if _STEP.match(n)}
        is_step = np.array([n in step_names for n in o.name], dtype=bool)
        # steps first (they parent everything in their time range), then every thread by time
        steps = np.flatnonzero(is_step)
        steps = steps[np.argsort(start[steps], kind="stable")]
        step_ids = [self._add_op(0, "layer", f"rank {rank} {o.name[i]}", "profiler_step", int(start[i]), int(end[i] - start[i]))
                    for i in steps.tolist()]
        step_start, step_end = start[steps], end[steps]
        rest = np.flatnonzero(~is_step)
        order = rest[np.lexsort((-end[rest], start[rest], thread[rest]))]
        base = len(self.ops["op_id"])
        th, st, en = thread[order], start[order], end[order]
        local = nesting_parents(th, st, en)
        if local is None:
            local = _nesting_parents_loop(th.tolist(), st.tolist(), en.tolist())
        top = local < 0
        parent = np.where(top, 0, base + local)
        if top.any() and len(step_start):
            k = np.searchsorted(np.asarray(step_start), st[top], side="right") - 1
            kc = np.maximum(k, 0)
            inside = (k >= 0) & (np.asarray(step_end)[kc] >= en[top])
            parent[top] = np.where(inside, np.asarray(step_ids, dtype=np.int64)[kc], 0)
        parent = parent.tolist()
        idx = order.tolist()
        kinds = [o.cat[i] or "cpu_op" if o.args[i] is None else KC.collective_kind(str(o.args[i].get("Collective name", "")))
                 for i in idx]
        n = len(idx)
        self.ops["op_id"].extend(range(base, base + n))
        self.ops["parent_id"].extend(parent)
        self.ops["level"].extend(["op"] * n)
        self.ops["name"].extend([o.name[i] for i in idx])
        self.ops["kind"].extend(kinds)
        self.ops["start_ns"].extend(start[order].tolist())
        self.ops["dur_ns"].extend((end[order] - start[order]).tolist())
        ext = [o.ext[i] for i in idx]
        return {str(x): base + j for j, x in enumerate(ext) if x is not None}

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
            counters = _concat(self.counters)
            if counters:
                w.write("counters", counters)
        return {"kernels": len(kernels.get("kernel_id", ())), "dma": len(dma.get("start_ns", ())),
                "collectives": len(self.comm), "ops": len(self.ops["op_id"]), "tracks": len(self.tracks["track_id"]),
                "counters": sum(len(c["time_ns"]) for c in self.counters)}


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
    workers: int = 1,
) -> ImportReport:
    """Import Kineto trace files (one per rank) into the trace directory `out`.

    `workers` > 1 reads rank files in that many processes when the caller is single
    threaded (the CLI passes the core count); otherwise files are read one by one.
    """
    if not paths:
        raise UserError("name at least one Kineto trace file to import.")
    # Parsing allocates millions of objects that all live until the end: the cyclic
    # collector would re-walk them over and over (a third of the run) for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _import(paths, out, include_python, overwrite, progress, workers)
    finally:
        if was_enabled:
            gc.enable()


def _read_rank(path: str | os.PathLike[str], include_python: bool) -> tuple[KinetoFile, RankEvents]:
    """Parse one file and sort its events into columns (the parsed JSON is dropped)."""
    f = load_kineto(path)
    ev = extract(f.events, include_python=include_python)
    f.events = []
    return f, ev


def _can_fork(n_files: int, workers: int) -> bool:
    """Parallel reading forks: only from a single-threaded process (the CLI), never under a GUI."""
    return (n_files > 1 and workers > 1 and (os.cpu_count() or 1) > 1
            and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods())


def _read_parallel(paths: Sequence[str | os.PathLike[str]], include_python: bool,
                   workers: int) -> list[tuple[KinetoFile, RankEvents]] | None:
    """Read rank files in worker processes (each parse is independent and CPU bound)."""
    from concurrent.futures import ProcessPoolExecutor

    n = min(workers, len(paths), os.cpu_count() or 1)
    try:
        with warnings.catch_warnings():
            # numpy's and Arrow's idle thread pools make Python warn about fork; the
            # children only parse JSON and never touch those pools or their locks.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(_read_rank, paths, [include_python] * len(paths)))
    except (OSError, BrokenProcessPool):  # no processes to be had: read them here instead
        return None


def _import(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], include_python: bool,
            overwrite: bool, progress: Callable[[str], None] | None, workers: int) -> ImportReport:
    read = _read_parallel(paths, include_python, workers) if _can_fork(len(paths), workers) else None
    if read is None:
        read = []
        for p in paths:
            if progress:
                progress(f"reading {p}")
            read.append(_read_rank(p, include_python))
    files = [f for f, _ in read]
    extracted = [e for _, e in read]
    ranks = _assign_ranks(files)
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
