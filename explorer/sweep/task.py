"""One configuration of a sweep, run anywhere: validate, capture, summarise, return a row.

`run_task(task) -> Outcome` is what a Dask worker (or this process) runs: plain data in and
out. A configuration the simulator refuses (does not fit, does not divide) becomes a
`refused` row with the refusal's one sentence; an unexpected failure a `failed` row (its
traceback on the worker's stderr), so one bad configuration never stops a sweep.

The metrics are explorer.model's, computed on the trace the capture wrote -- the numbers
`trnx summary` prints for it. A trace that is not kept is written to this process's scratch
directory and removed once summarised. A kept one is written straight into the sweep's
traces/ when this worker sees the sweep directory (same machine or a shared file system);
otherwise its files travel back with the row and the client writes them (`install_trace`).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcore.errors import ConfigError, UserError
from simcore.tempfiles import alive
from simcore.workloads.memory import DoesNotFit

SWEEP_FILE = "sweep.json"
_SCRATCH_NAME = re.compile(r"^trnx-sweep-(?P<pid>\d{1,10})-[A-Za-z0-9_]+$")
_scratch: Path | None = None
_scratch_lock = threading.Lock()


@dataclass(frozen=True)
class Task:
    config: int
    options: dict[str, Any]        # every capture option of the configuration (fixed + grid)
    sweep_dir: str                 # absolute, as the client sees it
    sweep_id: str                  # sweep.json's id: tells a worker whether it sees that directory
    keep_as: str | None = None     # the kept trace's name under traces/, or None


@dataclass
class Outcome:
    row: dict[str, Any]
    trace_files: dict[str, bytes] | None = field(default=None, repr=False)  # a kept trace to write on the client


def _row(task: Task, status: str, reason: str | None = None, **metrics: Any) -> dict[str, Any]:
    return {"config": task.config, "status": status, "reason": reason, "trace": None, **metrics}


def sees_sweep(sweep_dir: str | Path, sweep_id: str) -> bool:
    """Is `sweep_dir` the client's sweep directory, seen from here?"""
    try:
        return json.loads((Path(sweep_dir) / SWEEP_FILE).read_text()).get("id") == sweep_id
    except (OSError, ValueError, AttributeError):
        return False


def run_task(task: Task) -> Outcome:
    """Capture and measure one configuration (see the module docstring)."""
    from explorer.sweep.results import FAILED, REFUSED
    from simcore.capture.config import resolve
    from simcore.capture.options import CaptureConfig

    try:
        cfg = CaptureConfig.from_kwargs(task.options, workers=1, overwrite=False)  # configurations run in parallel
        res = resolve(cfg)
    except DoesNotFit as exc:
        return Outcome(_row(task, REFUSED, str(exc), fits=False, hbm_bytes_per_chip=exc.need_bytes,
                            hbm_capacity_bytes_per_chip=exc.capacity_bytes))
    except UserError as exc:
        return Outcome(_row(task, REFUSED, str(exc)))
    in_place = task.keep_as is not None and sees_sweep(task.sweep_dir, task.sweep_id)
    target = Path(task.sweep_dir) / "traces" / task.keep_as if in_place else scratch_dir() / f"config-{task.config}.trnx"
    try:
        return _capture_and_measure(task, res, target, in_place)
    except UserError as exc:   # the simulator refusing mid-way, or the kept trace's path taken
        status = REFUSED if isinstance(exc, ConfigError) else FAILED
        return Outcome(_row(task, status, str(exc)))
    except MemoryError:
        return Outcome(_row(task, FAILED, "the capture ran out of memory (fewer workers per machine leave each more)."))
    except OSError as exc:
        return Outcome(_row(task, FAILED, f"cannot write {exc.filename or target}: {exc.strerror or exc}."))
    except Exception as exc:  # noqa: BLE001 -- one configuration's bug must not stop the sweep
        traceback.print_exc(file=sys.stderr)
        return Outcome(_row(task, FAILED, f"the capture failed because of an internal error ({type(exc).__name__}: "
                                          f"{exc})."))
    finally:
        if not in_place and target.exists():
            shutil.rmtree(target, ignore_errors=True)   # ours: in this process's scratch directory


def _capture_and_measure(task: Task, res: Any, target: Path, in_place: bool) -> Outcome:
    from explorer.model.analysis.step import step_metrics
    from explorer.model.analysis.summary import summarize
    from explorer.sweep.results import OK, SUMMARY_METRICS
    from explorer.sweep.traces import taken
    from simcore.capture.engine import capture_to
    from simcore.trace import open_trace

    if in_place and os.path.lexists(target):   # an earlier run's trace of this configuration, or something else
        why = taken(target, task.options)
        if why is not None:
            raise UserError(why)
        path = target
    else:
        path = capture_to(res, target)
    trace = open_trace(path)
    summary = summarize(trace)
    row = _row(task, OK, **step_metrics(trace, summary.metrics["total_time_ns"]),
               **{n: summary.metrics[n] for n in SUMMARY_METRICS})
    files = None
    if task.keep_as is not None:
        row["trace"] = f"traces/{task.keep_as}"
        if not in_place:
            files = {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    return Outcome(row, files)


# -- this process's scratch directory (traces that are not kept) ----------------------------
def scratch_dir() -> Path:
    """`$TMPDIR/trnx-sweep-PID-XXXX`, made once per process and removed at exit; those of dead
    processes (a killed worker) are removed when the next one is made -- nothing else is."""
    global _scratch
    with _scratch_lock:
        if _scratch is None or not _scratch.is_dir():
            base = Path(tempfile.gettempdir())
            for entry in base.iterdir():
                m = _SCRATCH_NAME.match(entry.name)
                if m and entry.is_dir() and not entry.is_symlink() and not alive(int(m["pid"])):
                    shutil.rmtree(entry, ignore_errors=True)
            _scratch = Path(tempfile.mkdtemp(prefix=f"trnx-sweep-{os.getpid()}-", dir=base))
            atexit.register(shutil.rmtree, _scratch, True)
        return _scratch
