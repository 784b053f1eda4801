"""A multi-chip capture: shard the step over chips, simulate each distinct chip program once,
compose the timeline across chips, and write the tables partitioned by chip.

    plan (parallel.Planner) -> classes of identical chip programs -> simulate each class
    (runner: inline or worker processes) -> compose (jitter, stragglers, collectives and
    their waits, link sharing) -> MultiChipTables (every per-chip table partitioned by chip)
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


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def chip_classes(plan: StepPlan) -> tuple[np.ndarray, list[int]]:
    """Class of every chip (chips with identical programs share one) and a representative per class.

    Each distinct op (by value) and gap gets a small integer once, so comparing programs is
    comparing tuples of integers (chips mostly share op objects: each is looked at once)."""
    keys: dict[tuple, int] = {}
    interned: dict[Any, int] = {}
    by_object: dict[int, int] = {}
    class_of = np.zeros(plan.chips, np.int64)
    reps: list[int] = []
    for chip, prog in enumerate(plan.programs):
        sig = []
        for it in prog:
            if isinstance(it, Compute):
                code = by_object.get(id(it))
                if code is None:
                    o = it.op
                    value = (it.key, o.kind, o.name, o.dtype, o.layer, _freeze(o.params))
                    code = by_object[id(it)] = interned.setdefault(value, len(interned))
            else:
                code = interned.setdefault(("gap", round(it.gap, 3)), len(interned))
            sig.append(code)
        key = tuple(sig)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(reps)
            reps.append(chip)
        class_of[chip] = k
    return class_of, reps


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

    report(0.0, f"sharding over {mc.par.chips} chips")
    plan = mc.planner(res.workload.dtype, seed).build()
    class_of, reps = chip_classes(plan)
    detail_classes = {int(class_of[c]) for c in mc.detail_chips}
    items = [sim_items(plan.programs[c]) for c in reps]
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
                    report(SIM * (base + done) / total, f"chip class {k + 1}/{len(items)}: op {done}/{n}")
            sims.append(simulate_program(hw, it, res.compute_cores, res.detail_cores if k in detail_classes else [],
                                         step, cancel))
            base += work[k]
    else:
        tasks = [(hw.data, it, res.compute_cores, res.detail_cores if k in detail_classes else [])
                 for k, it in enumerate(items)]
        first: list[ChipSim] = []
        if hasattr(runner, "initializer"):  # worker processes (ProcessRunner, DaskRunner): the first class here;
            # its windows seed every worker's cache
            first = [simulate_task(tasks[0])]
            tasks = tasks[1:]
            report(SIM * work[0] / total, f"chip class 1/{len(items)} simulated; starting workers")
            runner.initializer, runner.initargs = seed_windows, export_windows(hw)
        finished = [work[0] if first else 0]

        def done(i: int) -> None:
            finished[0] += work[i + len(first)]
            report(SIM * finished[0] / total, f"chip classes: {finished[0]}/{total} ops simulated")

        sims = first + runner.map(simulate_task, tasks, done)
    report(SIM, "composing the chips' timelines")
    seg_dur = [sims[class_of[c]].seg_end - sims[class_of[c]].seg_start for c in range(plan.chips)]
    n_seg = max(len(s) for s in seg_dur)
    factor, delay = compute_factors(plan.chips, n_seg, mc.jitter, mc.stragglers, seed)
    gaps = [sum(it.gap for it in prog if isinstance(it, CommRef)) for prog in plan.programs]
    horizon = max(float(seg_dur[c].sum()) * float(factor[c].max()) + gaps[c] for c in range(plan.chips)) + float(delay.max())
    slice_ns = max(100.0, 1.5 * horizon / 8192)
    tl = compose(plan, seg_dur, factor, delay, slice_ns, 1.5 * horizon + 1e5)
    report(0.9, "writing tables")
    tables = MultiChipTables(hw, plan, sims, class_of, [plan.programs[c] for c in reps], tl, mc.detail_chips,
                             res.detail_cores, res.compute_cores, res.workload.display)
    tables.write(writer, lambda i, n: report(0.9 + 0.1 * i / n, f"writing chip {i}/{n}"))
    forget_ops()
    writer.meta.setdefault("capture", {})["chip_classes"] = len(reps)
    writer.meta["capture"]["collectives"] = len(plan.collectives)
