"""Run validation cases through `simcore.capture` and measure what each source measured.

A case's `sim` table is capture options (or an inline op graph under `ops`) plus `measure`:
`duration` is the trace's span (a micro-benchmark kernel's time, a model step's time) and
`collective` the longest rank's collective time from start to end (what nccom-test times), and
`dma` the longest HBM -> SBUF transfer on the DMA queues (what a profile's DMA row shows; the
capture needs instruction detail, `cores = "0"`). A case whose harness times each call from the host
(`sim.harness`, resolved by the dataset to `host_step_ns`) runs on its preset with that host time
added at the start of the step, as a what-if preset would.
Figures are cached per process by their capture options, so cases that share a capture (and
the test after the CLI) simulate it once; traces go to a temporary directory removed at once.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from simcore.trace import open_trace
from simcore.validation.dataset import UNITS_NS, Case

_CACHE: dict[str, float] = {}  # canonical sim options -> simulated nanoseconds


@dataclass(frozen=True)
class Result:
    case: Case
    simulated: float  # in the case's unit

    @property
    def error(self) -> float:
        """Relative error, simulated / measured - 1: negative when the simulator is too fast."""
        return self.simulated / self.case.measured - 1.0

    @property
    def passed(self) -> bool:
        return abs(self.error) <= self.case.tolerance


def _capture_options(sim: dict[str, Any], workdir: Path) -> dict[str, Any]:
    opts = {k: v for k, v in sim.items() if k not in ("measure", "ops", "harness", "host_step_ns")}
    if sim.get("host_step_ns"):
        # the harness's host share of each call: the case's preset as a what-if preset with that host time
        preset = workdir / "harness.toml"
        preset.write_text(f'base = {json.dumps(str(sim.get("hardware", "trn3")))}\n'
                          f'name = {json.dumps(str(sim.get("hardware", "trn3")) + " (host-timed harness)")}\n'
                          f'[runtime]\nhost_step_ns = {float(sim["host_step_ns"])!r}\n')
        opts["hardware"] = str(preset)
    if "ops" in sim:
        graph = workdir / "graph.json"
        graph.write_text(json.dumps({"name": "validation", "dtype": sim.get("dtype", "bf16"), "ops": sim["ops"]}))
        opts["workload"] = str(graph)
    return opts


def _measure_ns(trace_path: Path, measure: str) -> float:
    trace = open_trace(trace_path, validate=False)
    if measure == "collective":
        cc = trace.table("collectives")
        if cc.num_rows == 0:
            raise ValueError(f"{trace_path} holds no collective to time")
        return float(pc.max(pc.subtract(cc["end_ns"], cc["start_ns"])).as_py())
    if measure == "dma":
        dma = trace.table("dma")
        loads = dma.filter(pc.equal(dma["src"], "hbm"))
        if loads.num_rows == 0:
            raise ValueError(f"{trace_path} holds no HBM -> SBUF transfer to time (capture it with cores = \"0\")")
        return float(pc.max(loads["dur_ns"]).as_py())
    return float(trace.duration_ns)


def simulate_ns(sim: dict[str, Any]) -> float:
    """The simulated figure of one `sim` table, in nanoseconds (cached for this process)."""
    key = json.dumps(sim, sort_keys=True)
    if key not in _CACHE:
        import simcore.capture  # the simulator, imported only when a case runs

        with tempfile.TemporaryDirectory(prefix="trnx-validation-") as tmp:
            work = Path(tmp)
            out = simcore.capture.capture(_capture_options(sim, work), work / "case.trnx")
            _CACHE[key] = _measure_ns(out, str(sim.get("measure", "duration")))
    return _CACHE[key]


def run_case(case: Case) -> Result:
    return Result(case, simulate_ns(case.sim) / UNITS_NS[case.unit])


def run_cases(cases: Iterable[Case], progress: Callable[[Case, Result, float], None] | None = None) -> list[Result]:
    """Every case in order; `progress(case, result, seconds)` after each one."""
    results = []
    for case in cases:
        t0 = time.perf_counter()
        result = run_case(case)
        results.append(result)
        if progress:
            progress(case, result, time.perf_counter() - t0)
    return results
