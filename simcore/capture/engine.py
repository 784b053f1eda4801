"""Run a capture: shard every op over the cores, schedule it, and write the trace.

Ops run one after another on the chip (an op starts when every core has finished the
previous one: its inputs are the previous op's outputs, exchanged through HBM), after the
runtime's barrier and the kernel's launch (simcore.timing.runtime, the `Runtime` rows). Inside
an op, the cores' kernels run concurrently and share the chip's HBM bandwidth.
Kernel rows are recorded for every core; instructions, DMA transfers and dependency
flows for the cores picked for instruction detail.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import simcore
from simcore.capture.cancel import Progress, check_cancel
from simcore.capture.collective import CollectiveTables, collective_meta
from simcore.capture.config import Resolved
from simcore.capture.multichip.capture import capture_multichip
from simcore.capture.tables import TraceTables
from simcore.lowering.kernels import KernelSpec, check_capture_work, lower_kernel, shard
from simcore.timing.runtime import OP_BARRIER
from simcore.timing.window import PreparedCache, schedule_window
from simcore.trace import TraceWriter
from simcore.trace.background import BackgroundWriter


def simulate(res: Resolved, progress: Progress | None = None, cancel: Any = None,
             writer: TraceWriter | BackgroundWriter | None = None) -> TraceTables:
    """Simulate a single-chip capture into trace tables (streaming flows to `writer` when given)."""
    hw, wl = res.hw, res.workload
    n_cores = hw.cores_per_chip
    cc = res.compute_cores
    tables = TraceTables(hw, res.detail_cores, wl, writer=writer)
    rt = hw.runtime
    t = rt.step_start_ns
    for opcode, a, b in rt.step_rows():
        tables.add_runtime(range(cc), opcode, a, b)
    first = True
    busy = np.full(n_cores, -1e300)
    last = np.full(n_cores, -1e300)
    n_ops = len(wl.ops)
    prepared = PreparedCache(hw)  # layers repeat their kernels: each list of programs is prepared once
    check_capture_work(hw, ([s for s in shard(op, cc) if s is not None] for op in wl.ops))
    for i, op in enumerate(wl.ops):
        check_cancel(cancel)
        specs = shard(op, cc) + [None] * (n_cores - cc)
        groups: dict[KernelSpec, list[int]] = {}
        for core, spec in enumerate(specs):
            if spec is not None:
                groups.setdefault(spec, []).append(core)
        if not groups:
            continue
        order = list(groups.items())
        programs = [lower_kernel(hw, spec) for spec, _ in order]
        weights = [len(cores) for _, cores in order]
        rep = [cores[0] for _, cores in order]
        running = sorted(c for _, cores in order for c in cores)
        for opcode, a, b in rt.rows_before(t, first):  # the barrier after the previous op, this op's launch
            tables.add_runtime(range(cc) if opcode == OP_BARRIER else running, opcode, a, b)
        t += rt.before_op_ns(first)
        first = False
        timed, (b_out, l_out), served = schedule_window(hw, programs, weights, t, (busy[rep], last[rep]),
                                                     prepared)
        if served is not None:
            tables.add_hbm(served)
        end = t
        for g, (spec, cores) in enumerate(order):
            busy[cores] = b_out[g]
            last[cores] = l_out[g]
            tables.add_kernels(op, i, spec, programs[g], timed[g], cores)
            end = max(end, float(timed[g].end.max()))
        t = end
        if progress is not None:
            progress((i + 1) / n_ops, f"{op.name} ({i + 1}/{n_ops})")
    return tables


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a capture runs. A capture makes few reference
    cycles but many small objects, and each collection walks every object the imports made
    (numba, pyarrow): 30-40% of a big capture's CPU time. Cycles made meanwhile are collected
    once it is back on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def capture_to(res: Resolved, out_path: str | os.PathLike[str], progress: Progress | None = None,
               cancel: Any = None, compression: str | None = None, runner: Any = None,
               observer: Any = None) -> Path:
    """Simulate and write the trace atomically (cancel or failure leaves nothing at `out_path`).

    `runner` (multi-chip captures) runs the chip simulations: see simcore.capture.multichip.runner.
    `observer` sees every batch written (TraceWriter.observer); one with a `writing_to(writer)` method
    is given the writer first (explorer's index recorder: its file goes inside the trace)."""
    meta = {
        "hardware": dict(res.hw.meta, chips=res.chips),
        "workload": res.workload.meta(),
        "simulator": {"name": "simcore", "version": simcore.__version__, "seed": int(res.config.seed),
                      "is_simulation": True},
        "capture": res.capture_meta(),
    }
    collective = res.workload.ops and res.workload.ops[0].kind == "collective"
    if collective:
        collective_meta(res, meta)
    writer = TraceWriter(out_path, meta, compression=compression, overwrite=res.config.overwrite)
    writer.observer = observer
    writing_to = getattr(observer, "writing_to", None)
    if writing_to is not None:  # (the timeline's index recorder writes its file inside the trace)
        writing_to(writer)
    if res.multichip is not None:
        with writer:  # committed when the block succeeds, aborted (nothing left) when it raises
            capture_multichip(res, writer, progress, cancel, runner)
            check_cancel(cancel)
        return writer.path
    if collective:
        with writer:
            tables = CollectiveTables(res)
            if progress is not None:
                progress(1.0, res.workload.ops[0].name)
            check_cancel(cancel)
            tables.write(writer)
        return writer.path
    with gc_paused(), BackgroundWriter(writer) as background:  # the disk writes while the simulation runs
        tables = simulate(res, progress, cancel, background)
        check_cancel(cancel)
        tables.write(background)
    return writer.path


__all__ = ["capture_to", "simulate"]
