"""Where chip simulations run: in this process, in local worker processes, or anywhere else.

A multi-chip capture simulates each distinct chip program (a *class* of chips) as an
independent task, `simulate_task((hardware data, items, compute cores, detail cores))
-> ChipSim`: plain picklable data in, plain data out, no shared state. A runner maps
that function over the tasks and returns the results in task order:

    class Runner(Protocol):
        def map(self, fn, tasks, done=None) -> list: ...   # done(i) after task i finishes

`InlineRunner` runs them here (with per-op progress and cancel); `ProcessRunner` uses
the machine's cores (a `forkserver` pool, safe to start from a GUI thread; each worker's
window cache is seeded with the first chip class's windows, simulated here first). To run chips
on a cluster, pass any object with that `map` -- e.g. over Dask
`client.map(fn, tasks)` / `client.gather`, or Ray `ray.remote(fn)` -- as
`simcore.capture(..., runner=...)` (docs/simulator.md, "Running chips elsewhere").
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol

from simcore.capture.cancel import check_cancel

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


@contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Workers only need simcore. Without this, each one re-imports the caller's __main__ script
    (multiprocessing's spawn preparation): it fails for a script read from stdin and re-runs any
    top-level code of an unguarded one. Processes start while tasks are submitted, inside this."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    hide = main is not None and path is not None and getattr(main, "__spec__", None) is None
    if hide:
        del main.__file__
    try:
        yield
    finally:
        if hide:
            main.__file__ = path


class ProcessRunner:
    """Run tasks on local worker processes; `cancel` (anything with is_set()) stops waiting."""

    def __init__(self, workers: int, cancel: Any = None, initializer: Callable | None = None,
                 initargs: tuple = ()) -> None:
        self.workers = max(1, int(workers))
        self.cancel = cancel
        self.initializer, self.initargs = initializer, initargs  # run once in each worker (e.g. seed its caches)

    def map(self, fn, tasks, done=None) -> list:
        # fork is unsafe in a process with threads (numpy's BLAS pool starts some at import, a GUI
        # has its own): workers come from a forkserver that has imported the simulator
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["simcore.capture.multichip.chipsim"])
        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)) or 1, mp_context=ctx,
                                   initializer=self.initializer, initargs=self.initargs)
        try:
            with _main_not_reimported():
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
                check_cancel(self.cancel)
            return results
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def idle_cores() -> int:
    """Cores nobody else is using right now (this process counts as one of the busy ones)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        busy_elsewhere = max(0.0, os.getloadavg()[0] - 1.0)
    except OSError:
        busy_elsewhere = 0.0
    return max(1, min(cpus, int(round(cpus - busy_elsewhere))))


def default_runner(workers: int | None, n_tasks: int, work: int, cancel: Any = None) -> Runner | None:
    """None (simulate inline with per-op progress) or a process pool, for `--workers` (None: auto:
    the idle cores, when there are several chip classes and enough work to pay for the processes)."""
    if workers is None:
        workers = idle_cores() if (n_tasks > 2 and work >= AUTO_MIN_OPS) else 1
    workers = min(workers, max(1, n_tasks - 1))
    return ProcessRunner(workers, cancel) if workers > 1 else None
