"""`run_sweep`: every configuration of a grid captured and measured, results kept as they finish.

    from explorer.sweep import run_sweep
    run_sweep("sweep", {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b"},
              ["tp=8,16", "batch=1,8", "dtype=bf16,fp8"], keep_traces=True)

After every finished configuration results.parquet is rewritten atomically with all finished
rows, so a killed sweep loses no finished row and `resume=True` runs only the rest (failed
rows again). Rows are sorted by configuration and captures are deterministic for a seed, so
the same sweep writes the same file on one process, a local cluster or a remote one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.sweep.execute import execute
from explorer.sweep.results import FAILED, FINISHED, grid_cell
from explorer.sweep.spec import SweepSpec
from explorer.sweep.store import SweepDir
from explorer.sweep.task import Task
from simcore.errors import UserError

Progress = Callable[[int, int, dict], None]   # (finished, to run, the row just finished)


@dataclass
class SweepRun:
    """What a run did: the directory, every row now in results.parquet, how many ran now."""

    sweep: SweepDir
    rows: list[dict[str, Any]]
    ran: int
    kept_from_before: int

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r["status"] == status)


def run_sweep(out: str | os.PathLike[str], fixed: Mapping[str, Any] | None = None, grid: Sequence[str] | None = None, *,
              resume: bool = False, keep_traces: bool = False, workers: int | None = None,
              scheduler: str | None = None, progress: Progress | None = None,
              started: Callable[[int, int], None] | None = None) -> SweepRun:
    """Run (or resume) the sweep of `fixed` capture options x `grid` ("KEY=V1,V2") in `out`.

    `fixed` and `grid` None with `resume`: the sweep recorded in `out`. `started(to_run,
    already_finished)` is called once before the first configuration runs."""
    spec = None if (grid is None and resume) else SweepSpec.build(fixed or {}, grid or [])
    client = None
    if scheduler is not None:   # before anything is written: an unreachable scheduler leaves nothing behind
        from simcore.capture.multichip.dask_runner import connect_scheduler

        client = connect_scheduler(scheduler)
    try:
        return _run(out, spec, resume, keep_traces, workers, client, progress, started)
    finally:
        if client is not None:
            client.close()


def _run(out: str | os.PathLike[str], spec: SweepSpec | None, resume: bool, keep_traces: bool, workers: int | None,
         client: Any, progress: Progress | None, started: Callable[[int, int], None] | None) -> SweepRun:
    sweep, previous = SweepDir.start(out, spec, resume, keep_traces)
    keep_traces = sweep.keep_traces
    configs = sweep.spec.configurations
    by_key = {c.key: c for c in configs}
    rows: dict[int, dict[str, Any]] = {}
    for r in previous:   # rows of this grid, renumbered by it (the key is what identifies a configuration)
        c = by_key.get(r.get("key"))
        if c is not None:
            rows[c.index] = {**r, "config": c.index}
    kept = sum(1 for r in rows.values() if r["status"] in FINISHED)
    if keep_traces:
        sweep.make_traces_dir()
    tasks = [Task(c.index, sweep.spec.options(c), str(Path(sweep.path).resolve()), sweep.id,
                  sweep.spec.trace_name(c) if keep_traces else None)
             for c in configs if rows.get(c.index, {}).get("status") not in FINISHED]
    if started is not None:
        started(len(tasks), kept)
    for n, outcome in enumerate(execute(tasks, workers, client), 1):
        c = configs[outcome.row["config"]]
        row = {**outcome.row, **{k: grid_cell(v) for k, v in c.values.items()}, "key": c.key}
        if outcome.trace_files is not None:
            try:
                sweep.install_trace(sweep.spec.trace_name(c), outcome.trace_files, sweep.spec.options(c))
            except UserError as exc:
                row.update(status=FAILED, reason=str(exc), trace=None)
        rows[c.index] = row
        sweep.write(list(rows.values()))
        if progress is not None:
            progress(n, len(tasks), row)
    if not tasks and not sweep.results_path.exists():
        sweep.write([])
    return SweepRun(sweep, [rows[i] for i in sorted(rows)], len(tasks), kept)
