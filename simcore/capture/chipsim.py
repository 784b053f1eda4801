"""Simulate one chip's program -- its compute ops, with its collectives as gaps -- in its own time.

Chips that run the same program (every rank of a tensor-parallel group, every replica
of a data-parallel one) form a *class* and are simulated once; `simcore.capture.compose`
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

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.hardware import Hardware
from simcore.lowering.kernels import KernelSpec, lower_kernel, shard
from simcore.lowering.program import DTYPES, Program
from simcore.timing.window import HbmServed, Timed, schedule_window, throttle_of
from simcore.workloads.ops import Op

COLD = -1e300
CACHE_ENTRIES = 4096
CACHE_INSTRUCTIONS = 20_000_000
HBM_SLICE_MIN_NS = 256.0


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

    @property
    def segments(self) -> int:
        return len(self.seg_start)


class _WindowCache:
    def __init__(self) -> None:
        self.entries: OrderedDict[tuple, tuple] = OrderedDict()
        self.instructions = 0

    def get(self, key: tuple):
        hit = self.entries.get(key)
        if hit is not None:
            self.entries.move_to_end(key)
        return hit

    def put(self, key: tuple, value: tuple, size: int) -> None:
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


def _coarsen(s: HbmServed, t0: float) -> tuple[np.ndarray, ...]:
    k = max(1, int(np.ceil(HBM_SLICE_MIN_NS / s.slice_ns)))
    n = len(s.read)
    pad = (-n) % k
    rd = np.concatenate([s.read, np.zeros(pad)]).reshape(-1, k).sum(axis=1)
    wr = np.concatenate([s.write, np.zeros(pad)]).reshape(-1, k).sum(axis=1)
    width = s.slice_ns * k
    t = s.t0 - t0 + np.arange(len(rd)) * width
    return t, np.full(len(rd), width), rd, wr


def simulate_program(hw: Hardware, items: list[tuple[str, Any]], compute_cores: int, detail_cores: list[int],
                     progress=None, cancel=None) -> ChipSim:
    """Simulate a program of ("op", Op) and ("gap", ns) items; see the module docstring."""
    from simcore.capture.engine import CaptureCancelled

    n_cores = hw.cores_per_chip
    thr = throttle_of(hw)
    key_hw = hw.name + repr(sorted(hw.data.items()))
    cache = _CACHES.setdefault(key_hw, _WindowCache())
    detail = set(detail_cores)
    t = 0.0
    busy = np.full(n_cores, COLD)
    last = np.full(n_cores, COLD)
    seg = 0
    seg_start = [0.0]
    seg_end: list[float] = []
    names: dict[str, int] = {}
    rows: list[tuple] = []           # (op, seg, core, name, start, end, flops, model_flops, hr, hw, dtype, sbuf, psum)
    thr_rows: list[tuple[np.ndarray, ...]] = []
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
            continue
        if cancel is not None and cancel.is_set():
            raise CaptureCancelled("capture cancelled; nothing was written.")
        op: Op = value
        specs = shard(op, compute_cores) + [None] * (n_cores - compute_cores)
        groups: dict[KernelSpec, list[int]] = {}
        for core, spec in enumerate(specs):
            if spec is not None:
                groups.setdefault(spec, []).append(core)
        order = list(groups.items())
        op_seg.append(seg)
        done += 1
        if not order:
            op_span.append((t, t))
            continue
        rep = [cores[0] for _, cores in order]
        canon = tuple(_canonical(busy[r], last[r], t, thr.ramp_ns, thr.cooldown_ns) for r in rep)
        key = (tuple((spec, tuple(cores)) for spec, cores in order), canon)
        hit = cache.get(key)
        programs = [lower_kernel(hw, spec) for spec, _ in order]
        if hit is None:
            b_in = np.array([COLD if c is None else t + c[1] for c in canon])
            l_in = np.array([COLD if c is None else t + c[0] for c in canon])
            weights = [len(cores) for _, cores in order]
            timed, (b_out, l_out), served = schedule_window(hw, programs, weights, t, (b_in, l_in))
            rel = ([Timed(x.start - t, x.end - t, x.rate) for x in timed],
                   (np.where(b_out <= COLD / 2, COLD, b_out - t), np.where(l_out <= COLD / 2, COLD, l_out - t)),
                   None if served is None else _coarsen(served, t), sum(len(p) for p in programs))
            cache.put(key, rel, rel[-1])
            hit = rel
        timed_rel, (b_rel, l_rel), hbm_rel, _ = hit
        end = t
        first = np.inf
        for g, (spec, cores) in enumerate(order):
            tr = timed_rel[g]
            s_abs, e_abs = tr.start + t, tr.end + t
            busy[cores] = b_rel[g] + t if b_rel[g] > COLD / 2 else COLD
            last[cores] = l_rel[g] + t if l_rel[g] > COLD / 2 else COLD
            p = programs[g]
            k0, k1 = float(s_abs.min()), float(e_abs.max())
            first = min(first, k0)
            end = max(end, k1)
            code = names.setdefault(spec.name, len(names))
            flops, hr, hwr = int(p.flops.sum()), int(p.hbm_read.sum()), int(p.hbm_write.sum())
            pe = np.flatnonzero(p.pe)
            for core in cores:
                rows.append((done - 1, seg, core, code, k0, k1, flops, int(spec.model_flops), hr, hwr,
                             DTYPES.code(spec.dtype), int(p.sbuf_bytes), int(p.psum_bytes)))
                if core in detail:
                    det.append(DetailEvents(done - 1, seg, core, len(rows) - 1, p, s_abs, e_abs))
            if len(pe):
                val = tr.rate[pe].astype(np.float64) * 100.0
                keep = np.r_[True, np.abs(np.diff(val)) > 0.5]
                tt, vv = s_abs[pe][keep], np.round(val[keep], 1)
                for core in cores:
                    thr_rows.append((np.full(len(tt), core, np.int32), tt, vv, np.full(len(tt), seg, np.int32)))
        if hbm_rel is not None:
            ht, hwid, hrd, hwrt = hbm_rel
            hbm_rows.append((ht + t, hwid, hrd, hwrt, np.full(len(ht), seg, np.int32)))
        op_span.append((first, end))
        t = end
        if progress is not None:
            progress(done, n_ops)
    seg_end.append(t)
    return _pack(seg_start, seg_end, op_seg, op_span, names, rows, thr_rows, hbm_rows, det)


def _pack(seg_start, seg_end, op_seg, op_span, names, rows, thr_rows, hbm_rows, det) -> ChipSim:
    cols = ("op", "seg", "core", "name", "start", "end", "flops", "model_flops", "hbm_read", "hbm_write", "dtype",
            "sbuf", "psum")
    if rows:
        ints = np.array([[r[i] for i in (0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12)] for r in rows], np.int64)
        times = np.array([[r[4], r[5]] for r in rows], np.float64)
    else:
        ints = np.zeros((0, 11), np.int64)
        times = np.zeros((0, 2))
    order = np.lexsort((times[:, 0], ints[:, 2])) if len(rows) else np.zeros(0, np.int64)
    kern: dict[str, np.ndarray] = {}
    for j, name in enumerate(("op", "seg", "core", "name", "flops", "model_flops", "hbm_read", "hbm_write", "dtype",
                              "sbuf", "psum")):
        kern[name] = ints[order, j]
    kern["start"], kern["end"] = times[order, 0], times[order, 1]
    inv = np.empty(len(order), np.int64)
    inv[order] = np.arange(len(order))
    for d in det:
        d.kernel_row = int(inv[d.kernel_row])
    if thr_rows:
        tc = np.concatenate([r[0] for r in thr_rows])
        tt = np.concatenate([r[1] for r in thr_rows])
        tv = np.concatenate([r[2] for r in thr_rows])
        ts = np.concatenate([r[3] for r in thr_rows])
        o = np.lexsort((tt, tc))
        thr = {"core": tc[o], "t": tt[o], "v": tv[o], "seg": ts[o]}
    else:
        thr = {"core": np.zeros(0, np.int32), "t": np.zeros(0), "v": np.zeros(0), "seg": np.zeros(0, np.int32)}
    if hbm_rows:
        hbm = {k: np.concatenate([r[i] for r in hbm_rows]) for i, k in enumerate(("t", "width", "read", "write", "seg"))}
    else:
        hbm = {k: np.zeros(0) for k in ("t", "width", "read", "write")}
        hbm["seg"] = np.zeros(0, np.int32)
    _ = cols
    return ChipSim(np.array(seg_start), np.array(seg_end), np.array(op_seg, np.int32),
                   np.array(op_span, np.float64).reshape(-1, 2), list(names), kern, thr, hbm, det)


def simulate_task(task: tuple) -> ChipSim:
    """Process-pool entry point: (hardware data, items, compute cores, detail cores)."""
    data, items, compute_cores, detail_cores = task
    return simulate_program(Hardware(data), items, compute_cores, detail_cores)
