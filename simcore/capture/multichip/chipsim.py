"""Simulate one chip's program -- its compute ops, with its collectives as gaps -- in its own time.

Chips that run the same program (every rank of a tensor-parallel group, every replica
of a data-parallel one) form a *class* and are simulated once; `simcore.capture.multichip.compose`
then places each chip's stretches of compute on the shared timeline. A program is the
single-chip engine's loop (ops one after another, each op's kernels on all cores at
once sharing HBM), with two additions:

- a collective holds the chip for its idle-system duration (`gap`), so the tensor
  engine's power ramp sees the idle time it would see (a wait longer than the cool-down
  restarts the ramp either way);
- op windows are cached by (kernels per core, the tensor engine's ramp state coming in
  relative to the window start, made canonical): an op whose engines start cold -- the
  usual case after a collective -- schedules the same on every chip and layer, so a
  64-chip MoE step simulates its few distinct windows once per process. The window is
  always simulated from the canonical state, so the result never depends on which chip
  or process filled the cache.

The output is in simulation time with every kernel, sample and HBM slice tagged with its
segment (the stretch of compute between two collectives), which is all `compose` needs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.capture.cancel import check_cancel
from simcore.hardware import Hardware
from simcore.lowering.kernels import KernelSpec, lower_kernel, shard
from simcore.lowering.program import DTYPES, OPCODES, Program
from simcore.timing.runtime import OP_BARRIER
from simcore.timing.window import HbmServed, Timed, schedule_window, throttle_of
from simcore.workloads.ops import Op

COLD = -1e300
CACHE_ENTRIES = 4096
CACHE_INSTRUCTIONS = 20_000_000
HBM_SLICE_MIN_NS = 1000.0   # the finest HBM counter bin of a multi-chip trace (mctables.MIN_BIN_NS)
THROTTLE_STEP = 5.0


@dataclass
class DetailEvents:
    """One kernel on one instruction-detail core: its program and schedule (simulation time)."""

    op: int          # index of the compute op in the class program
    seg: int
    core: int
    kernel_row: int  # row in ChipSim's kernel arrays
    program: Program
    start: np.ndarray
    end: np.ndarray


@dataclass
class ChipSim:
    """A chip class's simulated program, in simulation time."""

    seg_start: np.ndarray
    seg_end: np.ndarray
    op_seg: np.ndarray                 # per compute op: its segment
    op_span: np.ndarray                # (ops, 2) first start, last end
    names: list[str]                   # kernel-name vocabulary
    kern: dict[str, np.ndarray]        # one row per (op, core), rows sorted by (core, start)
    thr: dict[str, np.ndarray]         # Throttling samples: core, t, v, seg (sorted by core, t)
    hbm: dict[str, np.ndarray]         # HBM slices: t, width, read, write, seg (time order)
    detail: list[DetailEvents] = field(default_factory=list)
    runtime: dict[str, np.ndarray] = field(default_factory=dict)  # Runtime rows: core, start, end, opcode, seg

    @property
    def segments(self) -> int:
        return len(self.seg_start)


_LOCK = threading.RLock()  # the caches below are shared by threads when a runner simulates chips on threads


class _WindowCache:
    def __init__(self) -> None:
        self.entries: OrderedDict[tuple, tuple] = OrderedDict()
        self.instructions = 0

    def get(self, key: tuple):
        with _LOCK:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
            return hit

    def put(self, key: tuple, value: tuple, size: int) -> None:
        with _LOCK:
            old = self.entries.pop(key, None)
            if old is not None:
                self.instructions -= old[-1]
            self.entries[key] = value
            self.instructions += size
            while self.entries and (len(self.entries) > CACHE_ENTRIES or self.instructions > CACHE_INSTRUCTIONS):
                _, old = self.entries.popitem(last=False)
                self.instructions -= old[-1]


_CACHES: dict[str, _WindowCache] = {}


def _canonical(busy: float, last: float, t0: float, ramp: float, cool: float) -> tuple[float, float] | None:
    """The ramp state relative to the window start, reduced to what can still matter."""
    if last <= t0 - cool:
        return None
    return (round(last - t0, 3), round(max(busy - t0, -ramp), 3))


def _steps(percent: np.ndarray) -> np.ndarray:
    """The Throttling counter in steps of THROTTLE_STEP percent (a ramp restarts after every
    collective, so 1,000 chips x 8 cores of 0.5% samples would dwarf the trace); full rate stays
    exactly 100 and anything below it stays below, so throttled time is exact."""
    q = np.round(percent / THROTTLE_STEP) * THROTTLE_STEP
    return np.where(percent >= 100.0 - 1e-9, 100.0, np.minimum(q, 100.0 - THROTTLE_STEP))


def _summarize(p: Program, x: Timed, t0: float) -> tuple:
    """What a kernel row and its Throttling samples need, relative to the window start."""
    pe = np.flatnonzero(p.pe)
    if len(pe):
        val = _steps(x.rate[pe].astype(np.float64) * 100.0)
        keep = np.r_[True, val[1:] != val[:-1]]
        th_t, th_v = x.start[pe][keep] - t0, val[keep]
    else:
        th_t, th_v = np.zeros(0), np.zeros(0)
    return (float(x.start.min()) - t0, float(x.end.max()) - t0, int(p.flops.sum()), int(p.hbm_read.sum()),
            int(p.hbm_write.sum()), int(p.sbuf_bytes), int(p.psum_bytes), th_t, th_v)


def _coarsen(s: HbmServed, t0: float) -> tuple[np.ndarray, ...]:
    k = max(1, int(np.ceil(HBM_SLICE_MIN_NS / s.slice_ns)))
    n = len(s.read)
    pad = (-n) % k
    rd = np.concatenate([s.read, np.zeros(pad)]).reshape(-1, k).sum(axis=1)
    wr = np.concatenate([s.write, np.zeros(pad)]).reshape(-1, k).sum(axis=1)
    width = s.slice_ns * k
    t = s.t0 - t0 + np.arange(len(rd)) * width
    wid = np.maximum(np.minimum(t + width, s.t1 - t0) - t, 0.0)  # the last one ends with the window
    busy = (rd > 0) | (wr > 0)  # idle slices add nothing to a counter bin
    return t[busy], wid[busy], rd[busy], wr[busy]


def simulate_program(hw: Hardware, items: list[tuple[str, Any]], compute_cores: int, detail_cores: list[int],
                     progress=None, cancel=None) -> ChipSim:
    """Simulate a program of ("op", Op) and ("gap", ns) items; see the module docstring."""
    n_cores = hw.cores_per_chip
    thr = throttle_of(hw)
    rt = hw.runtime
    with _LOCK:
        cache = _CACHES.setdefault(_cache_key(hw), _WindowCache())
    detail = set(detail_cores)
    rt_rows: list[tuple] = [(range(compute_cores), OPCODES.code(o), a, b, 0) for o, a, b in rt.step_rows()]
    after_op = False                 # an op ran since the step start or the last collective: a barrier first
    t = rt.step_start_ns
    busy = np.full(n_cores, COLD)
    last = np.full(n_cores, COLD)
    seg = 0
    seg_start = [0.0]
    seg_end: list[float] = []
    names: dict[str, int] = {}
    rows: list[tuple] = []           # per (op, group): op, seg, name, start, end, flops, model_flops, hr, hw, dtype, sbuf, psum, cores
    thr_rows: list[tuple] = []       # per (op, group): cores, times, values, seg
    hbm_rows: list[tuple[np.ndarray, ...]] = []
    det: list[DetailEvents] = []
    op_seg: list[int] = []
    op_span: list[tuple[float, float]] = []
    n_ops = sum(1 for kind, _ in items if kind == "op")
    done = 0
    for kind, value in items:
        if kind == "gap":
            seg_end.append(t)
            t += float(value)
            seg += 1
            seg_start.append(t)
            after_op = False  # the collective's completion semaphores are the barrier
            continue
        check_cancel(cancel)
        op: Op = value
        order, spec_id = _sharded(op, compute_cores, n_cores)
        op_seg.append(seg)
        done += 1
        if not order:
            op_span.append((t, t))
            continue
        rep = [cores[0] for _, cores in order]
        running = sorted(c for _, cores in order for c in cores)
        for opcode, a, b in rt.rows_before(t, not after_op):
            rt_rows.append((range(compute_cores) if opcode == OP_BARRIER else running, OPCODES.code(opcode), a, b, seg))
        t += rt.before_op_ns(not after_op)
        after_op = True
        canon = tuple(_canonical(busy[r], last[r], t, thr.ramp_ns, thr.cooldown_ns) for r in rep)
        key = (spec_id, canon)
        hit = cache.get(key)
        wants_detail = any(c in detail for _, cores in order for c in cores)
        programs = [lower_kernel(hw, spec) for spec, _ in order] if (hit is None or wants_detail) else None
        if hit is None or (wants_detail and hit[0] is None):
            # scheduled at t = 0 from the canonical state: the result is a function of the key alone
            # (bit for bit), whichever chip, time or process fills the cache
            b_in = np.array([COLD if c is None else c[1] for c in canon])
            l_in = np.array([COLD if c is None else c[0] for c in canon])
            weights = [len(cores) for _, cores in order]
            timed, (b_out, l_out), served = schedule_window(hw, programs, weights, 0.0, (b_in, l_in))
            summary = [_summarize(p, x, 0.0) for p, x in zip(programs, timed)]
            size = sum(len(p) for p in programs) if wants_detail else len(order)  # what the entry holds
            hit = ([(x.start, x.end) for x in timed] if wants_detail else None, summary,
                   (np.where(b_out <= COLD / 2, COLD, b_out), np.where(l_out <= COLD / 2, COLD, l_out)),
                   None if served is None else _coarsen(served, 0.0), size)
            cache.put(key, hit, size)
        times_rel, summary, (b_rel, l_rel), hbm_rel, _ = hit
        end = t
        first = np.inf
        for g, (spec, cores) in enumerate(order):
            k0r, k1r, flops, hr, hwr, sbuf, psum, th_t, th_v = summary[g]
            busy[list(cores)] = b_rel[g] + t if b_rel[g] > COLD / 2 else COLD
            last[list(cores)] = l_rel[g] + t if l_rel[g] > COLD / 2 else COLD
            k0, k1 = k0r + t, k1r + t
            first = min(first, k0)
            end = max(end, k1)
            code = names.setdefault(spec.name, len(names))
            rows.append((done - 1, seg, code, k0, k1, flops, int(spec.model_flops), hr, hwr,
                         DTYPES.code(spec.dtype), sbuf, psum, cores))
            for core in cores:
                if core in detail:
                    st, en = times_rel[g]
                    det.append(DetailEvents(done - 1, seg, core, len(rows) - 1, programs[g], st + t, en + t))
            if len(th_t):
                thr_rows.append((cores, th_t + t, th_v, seg))
        if hbm_rel is not None:
            ht, hwid, hrd, hwrt = hbm_rel
            hbm_rows.append((ht + t, hwid, hrd, hwrt, np.full(len(ht), seg, np.int32)))
        op_span.append((first, end))
        t = end
        if progress is not None:
            progress(done, n_ops)
    seg_end.append(t)
    sim = _pack(seg_start, seg_end, op_seg, op_span, names, rows, thr_rows, hbm_rows, det)
    sim.runtime = _runtime_rows(rt_rows)
    return sim


def _runtime_rows(rows: list[tuple]) -> dict[str, np.ndarray]:
    """(cores, opcode, start, end, seg) intervals, one row per core, sorted by (core, start)."""
    n = np.array([len(r[0]) for r in rows], np.int64)
    core = np.concatenate([np.asarray(r[0], np.int64) for r in rows]) if rows else np.zeros(0, np.int64)
    vals = np.array([r[1:] for r in rows], np.float64).reshape(-1, 4)
    vals = np.repeat(vals, n, axis=0)
    o = np.lexsort((vals[:, 1], core))
    return {"core": core[o], "opcode": vals[o, 0].astype(np.int64), "start": vals[o, 1], "end": vals[o, 2],
            "seg": vals[o, 3].astype(np.int64)}


def _pack(seg_start, seg_end, op_seg, op_span, names, rows, thr_rows, hbm_rows, det) -> ChipSim:
    """Rows were recorded once per (op, group of identical cores); expand them to one per core."""
    ncores = np.array([len(r[-1]) for r in rows], np.int64)
    first_row = np.concatenate([[0], np.cumsum(ncores)[:-1]]) if len(rows) else np.zeros(0, np.int64)
    if rows:
        ints = np.repeat(np.array([r[:3] + r[5:12] for r in rows], np.int64), ncores, axis=0)
        times = np.repeat(np.array([r[3:5] for r in rows], np.float64), ncores, axis=0)
        core = np.concatenate([np.asarray(r[-1], np.int64) for r in rows])
    else:
        ints, times, core = np.zeros((0, 10), np.int64), np.zeros((0, 2)), np.zeros(0, np.int64)
    order = np.lexsort((times[:, 0], core)) if len(core) else np.zeros(0, np.int64)
    kern: dict[str, np.ndarray] = {"core": core[order]}
    for j, name in enumerate(("op", "seg", "name", "flops", "model_flops", "hbm_read", "hbm_write", "dtype", "sbuf",
                              "psum")):
        kern[name] = ints[order, j]
    kern["start"], kern["end"] = times[order, 0], times[order, 1]
    inv = np.empty(len(order), np.int64)
    inv[order] = np.arange(len(order))
    for d in det:  # the row of (group, core), then its place after sorting
        d.kernel_row = int(inv[first_row[d.kernel_row] + list(rows[d.kernel_row][-1]).index(d.core)])
    if thr_rows:  # group g's L_g samples once per core of its C_g cores, without a Python loop per group
        L = np.array([len(t) for _, t, _, _ in thr_rows], np.int64)
        C = np.array([len(c) for c, _, _, _ in thr_rows], np.int64)
        T = np.concatenate([t for _, t, _, _ in thr_rows])
        V = np.concatenate([v for _, _, v, _ in thr_rows])
        cores_flat = np.concatenate([np.asarray(c, np.int32) for c, _, _, _ in thr_rows])
        n_out = L * C
        g = np.repeat(np.arange(len(L)), n_out)
        p = np.arange(int(n_out.sum())) - np.repeat(np.cumsum(n_out) - n_out, n_out)
        src = (np.cumsum(L) - L)[g] + p % L[g]
        tc = cores_flat[(np.cumsum(C) - C)[g] + p // L[g]]
        tt, tv = T[src], V[src]
        ts = np.array([sg for _, _, _, sg in thr_rows], np.int32)[g]
        o = np.lexsort((tt, tc))
        thr = {"core": tc[o], "t": tt[o], "v": tv[o].astype(np.float32), "seg": ts[o]}  # v: whole 5% steps
    else:
        thr = {"core": np.zeros(0, np.int32), "t": np.zeros(0), "v": np.zeros(0), "seg": np.zeros(0, np.int32)}
    if hbm_rows:
        hbm = {k: np.concatenate([r[i] for r in hbm_rows]) for i, k in enumerate(("t", "width", "read", "write", "seg"))}
    else:
        hbm = {k: np.zeros(0) for k in ("t", "width", "read", "write")}
        hbm["seg"] = np.zeros(0, np.int32)
    return ChipSim(np.array(seg_start), np.array(seg_end), np.array(op_seg, np.int32),
                   np.array(op_span, np.float64).reshape(-1, 2), list(names), kern, thr, hbm, det)


_SPEC_IDS: dict[tuple, int] = {}      # ((spec, cores), ...) of a window -> a small integer (cheap to hash)
_SPEC_OF: list[tuple] = []
_SHARDED: dict[int, tuple] = {}       # id(op) -> (op, compute cores, order, spec id); chips share op objects


def _sharded(op: Op, compute_cores: int, n_cores: int) -> tuple[list, int]:
    """The kernel groups of an op over the cores and their interned id, once per op object."""
    with _LOCK:
        memo = _SHARDED.get(id(op))
        if memo is not None and memo[0] is op and memo[1] == compute_cores:
            return memo[2], memo[3]
    specs = shard(op, compute_cores) + [None] * (n_cores - compute_cores)
    groups: dict[KernelSpec, list[int]] = {}
    for core, spec in enumerate(specs):
        if spec is not None:
            groups.setdefault(spec, []).append(core)
    order = [(spec, tuple(cores)) for spec, cores in groups.items()]
    spec_id = _intern(tuple(order))
    with _LOCK:
        if len(_SHARDED) > 1_000_000:
            _SHARDED.clear()
        _SHARDED[id(op)] = (op, compute_cores, order, spec_id)  # holds op: its id cannot be reused meanwhile
    return order, spec_id


def _intern(specs: tuple) -> int:
    with _LOCK:
        i = _SPEC_IDS.get(specs)
        if i is None:
            i = _SPEC_IDS[specs] = len(_SPEC_OF)
            _SPEC_OF.append(specs)
        return i


def forget_ops() -> None:
    """Drop the per-op memo (a capture calls it when done, so its ops can be freed)."""
    with _LOCK:
        _SHARDED.clear()


def _cache_key(hw: Hardware) -> str:
    return hw.name + repr(sorted(hw.data.items()))


def export_windows(hw: Hardware) -> tuple[str, list[tuple]]:
    """The windows this process has simulated for `hw` (without instruction detail): what a
    worker process needs to skip the windows every chip shares."""
    key = _cache_key(hw)
    with _LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            return key, []
        return key, [((_SPEC_OF[k[0]], k[1]), v) for k, v in cache.entries.items() if v[0] is None]


def seed_windows(key: str, entries: list[tuple]) -> None:
    """Worker initializer: start with another process's windows (results are a function of the key)."""
    with _LOCK:
        cache = _CACHES.setdefault(key, _WindowCache())
    for (specs, canon), v in entries:
        cache.put((_intern(specs), canon), v, v[-1])


def simulate_task(task: tuple) -> ChipSim:
    """Process-pool entry point: (hardware data, items, compute cores, detail cores)."""
    data, items, compute_cores, detail_cores = task
    return simulate_program(Hardware(data), items, compute_cores, detail_cores)
