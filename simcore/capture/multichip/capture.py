"""A multi-chip capture: shard the step over chips, simulate each distinct chip program once,
compose the timeline across chips, and write the tables partitioned by chip.

    plan (parallel.Planner) -> classes of identical chip programs -> simulate each class
    (runner: inline or worker processes) -> compose (jitter, stragglers, collectives and
    their waits, link sharing) -> MultiChipTables (every per-chip table partitioned by chip)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.capture.chipsim import (ChipSim, export_windows, forget_ops, seed_windows, simulate_program,
                                     simulate_task)
from simcore.capture.compose import compose
from simcore.capture.mctables import MultiChipTables
from simcore.capture.runner import ProcessRunner, Runner, default_runner
from simcore.parallel import CommRef, Compute, Parallelism, Planner, StepPlan, Straggler, compute_factors
from simcore.topology import Topology
from simcore.trace import TraceWriter
from simcore.workloads.models import ModelConfig


@dataclass
class MultiChip:
    """The multi-chip part of a resolved capture."""

    cfg: ModelConfig
    phase: str
    batch: int
    seq: int
    context: int
    layers: int
    par: Parallelism
    topo: Topology
    jitter: float = 0.0
    stragglers: list[Straggler] = field(default_factory=list)
    expert_skew: float = 0.0
    detail_chips: list[int] = field(default_factory=list)
    algorithm: str = "auto"
    workers: int | None = None

    def meta(self) -> dict[str, Any]:
        """meta.json `capture` keys; option names match CaptureConfig so a trace can be re-run."""
        out: dict[str, Any] = {"parallelism": self.par.to_dict(), "chips": self.par.chips,
                               "sequence_parallel": self.par.sp, "microbatches": self.par.microbatches,
                               "topology": self.topo.describe(), "jitter": self.jitter,
                               "straggler": ";".join(s.to_text() for s in self.stragglers) or None,
                               "stragglers": [s.to_dict() for s in self.stragglers],
                               "expert_skew": self.expert_skew if self.cfg.moe is not None else None,
                               "detail_chips": self.detail_chips or None, "cc_algorithm": self.algorithm}
        return {k: v for k, v in out.items() if v is not None}

    def planner(self, dtype: str, seed: int) -> Planner:
        return Planner(self.cfg, self.phase, self.batch, self.seq, self.context, self.layers, dtype, self.par,
                       self.topo, algorithm=self.algorithm, expert_skew=self.expert_skew, seed=seed)


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


def capture_multichip(res, writer: TraceWriter, progress=None, cancel=None, runner: Runner | None = None) -> None:
    from simcore.capture.engine import CaptureCancelled

    mc: MultiChip = res.multichip
    hw = res.hw
    seed = int(res.config.seed)

    def report(fraction: float, message: str) -> None:
        if progress is not None:
            progress(min(1.0, fraction), message)
        if cancel is not None and cancel.is_set():
            raise CaptureCancelled("capture cancelled; nothing was written.")

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
        if isinstance(runner, ProcessRunner):  # the first class here; its windows seed every worker's cache
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
