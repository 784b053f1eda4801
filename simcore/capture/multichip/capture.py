"""A multi-chip capture: shard the step over ranks (logical cores), simulate each distinct rank
program once on its logical core, compose the timeline across ranks, and write the tables
partitioned by chip.

    plan (parallel.Planner) -> classes of identical rank programs -> simulate each class on a
    logical core (Hardware.logical_core: its physical cores and HBM share; runner: inline or
    worker processes) -> compose (jitter, stragglers, collectives and their waits, link
    sharing) -> MultiChipTables (every per-chip table partitioned by chip, a chip's ranks on
    their physical cores)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.capture.cancel import Progress, check_cancel
from simcore.capture.config import Resolved
from simcore.capture.multichip.chipsim import (ChipSim, export_windows, forget_ops, seed_windows, simulate_program,
                                               simulate_task)
from simcore.capture.multichip.compose import compose
from simcore.capture.multichip.runner import Runner, default_runner
from simcore.capture.multichip.spec import MultiChip
from simcore.capture.multichip.tables import MultiChipTables
from simcore.parallel import CommRef, Compute, StepPlan, compute_factors
from simcore.trace import TraceWriter
from simcore.workloads.ops import Op


def _freeze(v: Any) -> Any:
    if isinstance(v, Op):  # a fused op's parts
        return (v.name, v.kind, v.dtype, v.layer, _freeze(v.params))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def chip_classes(plan: StepPlan, extra: list | None = None) -> tuple[np.ndarray, list[int]]:
    """Class of every rank (ranks with identical programs, and identical `extra` -- their share of
    HBM, their instruction detail -- share one) and a representative per class.

    Each distinct op (by value) and gap gets a small integer once, so comparing programs is
    comparing tuples of integers (ranks mostly share op objects: each is looked at once)."""
    keys: dict[tuple, int] = {}
    interned: dict[Any, int] = {}
    by_object: dict[int, int] = {}
    class_of = np.zeros(plan.ranks, np.int64)
    reps: list[int] = []
    alive: list = []   # the objects whose ids are in by_object (ranks share Compute and collective references)
    for chip, prog in enumerate(plan.programs):
        sig: list = [] if extra is None else [("extra", extra[chip])]
        for it in prog:
            code = by_object.get(id(it))
            if code is None:
                if isinstance(it, Compute):
                    o = it.op
                    value = (it.key, o.kind, o.name, o.dtype, o.layer, _freeze(o.params))
                else:
                    value = ("gap", round(it.gap, 3))
                code = by_object[id(it)] = interned.setdefault(value, len(interned))
                alive.append(it)
            sig.append(code)
        key = tuple(sig)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(reps)
            reps.append(chip)
        class_of[chip] = k
    return class_of, reps


def _segment_hbm(sim: ChipSim, n_seg: int) -> np.ndarray:
    """HBM bytes (read + written) of each of a class's segments."""
    h = sim.hbm
    if not len(h["t"]):
        return np.zeros(n_seg)
    return np.bincount(h["seg"].astype(np.int64), weights=h["read"] + h["write"], minlength=n_seg)[:n_seg]


def stack_sharers(hw, ranks: int, lnc: int) -> list[int]:
    """Per rank: the ranks in use on its HBM stack (itself included). A logical core smaller than a
    stack's cores (LNC=1 on trn2: two physical cores per stack) shares the stack with the others."""
    per_chip = hw.cores_per_chip // lnc
    per_stack = max(1, (hw.cores_per_chip // hw.hbm_stacks) // lnc)   # ranks per stack
    stack = [(r // per_chip, (r % per_chip) // per_stack) for r in range(ranks)]
    count: dict[tuple[int, int], int] = {}
    for st in stack:
        count[st] = count.get(st, 0) + 1
    return [count[st] for st in stack]


def rank_detail(ranks: int, lnc: int, per_chip: int, chips: set[int], cores: list[int]) -> list[tuple[int, ...]]:
    """Per rank: its physical cores (0..lnc-1 within the rank) that get instruction detail -- the
    detail chips' --cores that belong to it."""
    out = []
    for r in range(ranks):
        base = (r % per_chip) * lnc
        out.append(tuple(c - base for c in cores if base <= c < base + lnc) if r // per_chip in chips else ())
    return out


def sim_items(prog: list) -> list[tuple[str, Any]]:
    return [("op", it.op) if isinstance(it, Compute) else ("gap", it.gap) for it in prog]


def capture_multichip(res: Resolved, writer: TraceWriter, progress: Progress | None = None, cancel: Any = None,
                      runner: Runner | None = None) -> None:
    """Simulate, compose and write the multi-chip step of `res` (see the module docstring)."""
    mc: MultiChip = res.multichip
    hw = res.hw
    seed = int(res.config.seed)

    def report(fraction: float, message: str) -> None:
        if progress is not None:
            progress(min(1.0, fraction), message)
        check_cancel(cancel)

    topo = mc.topo
    report(0.0, f"sharding over {mc.par.ranks} ranks on {topo.chips} chips")
    plan = mc.planner(res.workload.dtype, seed).build()
    lnc, per_chip = topo.lnc, topo.per_chip
    chip_of = np.arange(plan.ranks) // per_chip
    sharers = stack_sharers(hw, plan.ranks, lnc)
    local_detail = rank_detail(plan.ranks, lnc, per_chip, set(mc.detail_chips), res.detail_cores)
    class_of, reps = chip_classes(plan, [(sharers[r], local_detail[r]) for r in range(plan.ranks)])
    items = [sim_items(plan.programs[c]) for c in reps]
    rank_hw = [hw.logical_core(lnc, sharers[c]) for c in reps]
    detail_of = [list(local_detail[c]) for c in reps]
    work = [sum(1 for kind, _ in it if kind == "op") for it in items]
    total = max(1, sum(work))
    runner = runner if runner is not None else default_runner(mc.workers, len(reps), total, cancel)
    SIM = 0.85
    if runner is None:
        sims: list[ChipSim] = []
        base = 0
        for k, it in enumerate(items):
            def step(done: int, n: int, base=base, k=k) -> None:
                if done % 8 == 0 or done == n:
                    report(SIM * (base + done) / total, f"rank class {k + 1}/{len(items)}: op {done}/{n}")
            sims.append(simulate_program(rank_hw[k], it, lnc, detail_of[k], step, cancel))
            base += work[k]
    else:
        tasks = [(rank_hw[k].data, it, lnc, detail_of[k]) for k, it in enumerate(items)]
        first: list[ChipSim] = []
        if hasattr(runner, "initializer"):  # worker processes (ProcessRunner, DaskRunner): the first class here;
            # its windows seed every worker's cache
            first = [simulate_task(tasks[0])]
            tasks = tasks[1:]
            report(SIM * work[0] / total, f"rank class 1/{len(items)} simulated; starting workers")
            runner.initializer, runner.initargs = seed_windows, export_windows(rank_hw[0])
        finished = [work[0] if first else 0]

        def done(i: int) -> None:
            finished[0] += work[i + len(first)]
            report(SIM * finished[0] / total, f"rank classes: {finished[0]}/{total} ops simulated")

        sims = first + runner.map(simulate_task, tasks, done)
    report(SIM, "composing the ranks' timelines")
    seg_dur = [sims[class_of[c]].seg_end - sims[class_of[c]].seg_start for c in range(plan.ranks)]
    n_seg = max(len(s) for s in seg_dur)
    factor, delay = compute_factors(plan.ranks, n_seg, mc.jitter, mc.stragglers, seed, chip_of)
    gaps = [sum(it.gap for it in prog if isinstance(it, CommRef)) for prog in plan.programs]
    horizon = max(float(seg_dur[c].sum()) * float(factor[c].max()) + gaps[c] for c in range(plan.ranks)) + float(delay.max())
    slice_ns = max(100.0, 1.5 * horizon / 8192)
    seg_hbm = [_segment_hbm(sims[k], n_seg) for k in range(len(sims))]
    tl = compose(plan, seg_dur, factor, delay, slice_ns, 1.5 * horizon + 1e5, [seg_hbm[k] for k in class_of])
    report(0.9, "writing tables")
    tables = MultiChipTables(hw, plan, sims, class_of, [plan.programs[c] for c in reps], tl, mc.detail_chips,
                             res.detail_cores, res.workload.display)
    tables.write(writer, lambda i, n: report(0.9 + 0.1 * i / n, f"writing chip {i}/{n}"))
    forget_ops()
    writer.meta.setdefault("capture", {})["chip_classes"] = len(reps)
    writer.meta["capture"]["collectives"] = len(plan.collectives)
