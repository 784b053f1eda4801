"""Where chip simulations run: in this process, in local worker processes, or anywhere else.

A multi-chip capture simulates each distinct chip program (a *class* of chips) as an
independent task, `simulate_task((hardware data, items, compute cores, detail cores))
-> ChipSim`: plain picklable data in, plain data out, no shared state. A runner maps
that function over the tasks and returns the results in task order:

    class Runner(Protocol):
        def map(self, fn, tasks, done=None) -> list: ...   # done(i) after task i finishes

`InlineRunner` runs them here (with per-op progress and cancel); `ProcessRunner` uses
the machine's cores (a `forkserver` pool, safe to start from a GUI thread). To run chips
on a cluster, pass any object with that `map` -- e.g. over Dask
`client.map(fn, tasks)` / `client.gather`, or Ray `ray.remote(fn)` -- as
`simcore.capture(..., runner=...)` (docs/simulator.md, "Running chips elsewhere").
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Protocol

AUTO_MIN_OPS = 6000   # below this much simulation, starting worker processes costs more than it saves


class Runner(Protocol):
    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], done: Callable[[int], None] | None = None) -> list:
        ...


class InlineRunner:
    """Run every task in this process, one after another."""

    def map(self, fn, tasks, done=None) -> list:
        out = []
        for i, task in enumerate(tasks):
            out.append(fn(task))
            if done is not None:
                done(i)
        return out


class ProcessRunner:
    """Run tasks on local worker processes; `cancel` (anything with is_set()) stops waiting."""

    def __init__(self, workers: int, cancel: Any = None) -> None:
        self.workers = max(1, int(workers))
        self.cancel = cancel

    def map(self, fn, tasks, done=None) -> list:
        from simcore.capture.engine import CaptureCancelled

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["simcore.capture.chipsim"])
        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)) or 1, mp_context=ctx)
        try:
            futures = {pool.submit(fn, t): i for i, t in enumerate(tasks)}
            results: list = [None] * len(tasks)
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in finished:
                    i = futures[f]
                    results[i] = f.result()
                    if done is not None:
                        done(i)
                if self.cancel is not None and self.cancel.is_set():
                    raise CaptureCancelled("capture cancelled; nothing was written.")
            return results
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def default_runner(workers: int | None, n_tasks: int, work: int, cancel: Any = None) -> Runner | None:
    """None (simulate inline with per-op progress) or a process pool, for `--workers` (None: auto)."""
    cpus = os.cpu_count() or 1
    if workers is None:
        workers = min(cpus, n_tasks) if (cpus > 1 and n_tasks > 1 and work >= AUTO_MIN_OPS) else 1
    workers = min(workers, n_tasks)
    return ProcessRunner(workers, cancel) if workers > 1 else None
