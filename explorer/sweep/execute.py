"""Where a sweep's configurations run: in this process, on a local Dask cluster, or on an
existing one.

- `workers=1`: one after another in this process (no Dask).
- default: a `distributed.LocalCluster` sized to the machine -- one single-threaded worker
  process per core (the simulator is mostly Python, so processes, not threads), never more
  than there are configurations to run; a machine with one core runs them here.
- `client`: a `distributed.Client` of an existing cluster (`dask scheduler`, `dask worker`;
  docs/sweeps.md), e.g. from `connect_scheduler("tcp://HOST:PORT")`.

Outcomes arrive as configurations finish (`as_completed`), in any order; the caller sorts.
A worker that dies (out of memory, killed) is retried by Dask on another worker, and after
that its configuration becomes a `failed` row.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from explorer.sweep.task import Outcome, Task, run_task


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def local_workers(workers: int | None, pending: int) -> int:
    """Worker processes for a local run: `workers`, or the machine's cores; at most `pending`."""
    return max(1, min(workers if workers is not None else machine_cores(), pending))


def execute(tasks: Sequence[Task], workers: int | None = None, client: Any = None) -> Iterator[Outcome]:
    """Run `tasks` (on `client`'s cluster when given), yielding each Outcome as it finishes."""
    if not tasks:
        return
    if client is not None:
        yield from _on_cluster(client, tasks)
        return
    n = local_workers(workers, len(tasks))
    if n == 1:
        for task in tasks:
            yield run_task(task)
        return
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield from _on_cluster(client, tasks)


def _on_cluster(client, tasks: Sequence[Task]) -> Iterator[Outcome]:
    from distributed import as_completed

    from explorer.sweep.results import FAILED

    futures = client.map(run_task, list(tasks), pure=False)
    task_of = {f.key: t for f, t in zip(futures, tasks)}
    try:
        for future in as_completed(futures, loop=client.loop):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 -- the worker died or the task could not run there
                task = task_of[future.key]
                yield Outcome({"config": task.config, "status": FAILED, "trace": None,
                               "reason": f"the worker running it failed ({type(exc).__name__}: "
                                         f"{str(exc).splitlines()[0] if str(exc) else 'no message'})."})
    finally:
        client.cancel([f for f in futures if not f.done()])
