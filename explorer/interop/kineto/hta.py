"""Which device events Holistic Trace Analysis (HTA) 0.5.0 analyses, decided while importing.

HTA's temporal breakdown and communication-computation overlap do not look at every
device event of a PyTorch-profiler trace:
- a *device event* is any event with an integer `args.stream` other than -1 (`int()` of
  the value; a missing or unparsable stream is -1): kernels, copies, memsets and stream
  synchronisations carry one; Kineto's `gpu_user_annotation` copies do not, nor does an
  `Event Sync` (stream -1);
- when the trace (all ranks together) names two or more distinct `ProfilerStep`s, HTA
  drops the last profiler step: a *GPU kernel* (stream >= 0 and `args.correlation` >= 0,
  or named `Event Sync`/`Context Sync`) is kept only when a non-GPU event with the same
  correlation - its runtime launch (`cudaLaunchKernel`, `hipLaunchKernel`,
  `runFunction`...) - starts before the last `ProfilerStep` starts; any other event is
  kept when it starts before that itself. "The last ProfilerStep" is the latest start of a
  non-GPU event whose name contains `ProfilerStep` (the CPU annotation, or Kineto's device
  copy of it, which starts later). A rank without one keeps nothing.
Times are compared as HTA reads them: microseconds rounded up to a whole microsecond
(`round_down_time_stamps`). The importer computes per device row the time its launch
started (`launch_us`, +inf without one) and per rank the last step's start; the trace
keeps the rows HTA leaves out as `meta.capture.hta_excluded` id ranges, which
`explorer.model.analysis.temporal` skips for imported traces.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

STEP_MARK = "ProfilerStep"
SYNC_NAMES = frozenset({"Event Sync", "Context Sync"})  # device-level syncs HTA counts as GPU events


def hta_stream(value: Any) -> int:
    """`args.stream` as HTA normalises it: `int(value)`, -1 when absent or not convertible."""
    if value is None:
        return -1
    if type(value) is bool:
        return int(value)
    if type(value) is int:
        return value if abs(value) < 2 ** 62 else -1
    if type(value) is float:
        return int(value) if math.isfinite(value) and abs(value) < 2 ** 62 else -1
    if type(value) is str:
        try:
            v = int(value)
        except ValueError:
            return -1
        return v if abs(v) < 2 ** 62 else -1
    return -1


def hta_correlation(value: Any) -> int:
    """`args.correlation` as an integer, -1 when absent or not an integer (HTA's default)."""
    if type(value) is int and abs(value) < 2 ** 62:
        return value
    if type(value) is float and math.isfinite(value) and value == int(value) and abs(value) < 2 ** 62:
        return int(value)
    return -1


def rank_marks(ts: np.ndarray, names: np.ndarray, vocab: list[str], corr: np.ndarray, stream: np.ndarray,
               device: np.ndarray) -> tuple[np.ndarray, frozenset[str], float]:
    """For one rank's kept events (any class; times in us, `names` codes into `vocab`):
    the launch time HTA compares for each `device` row (see the module doc), the distinct
    names containing ProfilerStep, and the last ProfilerStep's start (NaN without one)."""
    is_sync = np.array([v in SYNC_NAMES for v in vocab] or [False], dtype=bool)
    is_step = np.array([STEP_MARK in v for v in vocab] or [False], dtype=bool)
    gpu = ((stream >= 0) & (corr >= 0)) | is_sync[names]
    up = np.ceil(ts)
    steps = ~gpu & is_step[names]
    last = float(up[steps].max()) if steps.any() else math.nan
    step_names = frozenset(vocab[c] for c in np.unique(names[is_step[names]]).tolist())
    launch = np.where(device & ~gpu, up, np.inf)
    host = np.flatnonzero(~gpu)
    want = np.flatnonzero(device & gpu)
    if len(host) and len(want):
        keys, inv = np.unique(corr[host], return_inverse=True)
        first = np.full(len(keys), np.inf)
        np.minimum.at(first, inv, up[host])
        pos = np.clip(np.searchsorted(keys, corr[want]), 0, len(keys) - 1)
        launch[want] = np.where(keys[pos] == corr[want], first[pos], np.inf)
    return launch, step_names, last


def counted(stream: np.ndarray, launch: np.ndarray, last_step_us: float, drop_last_step: bool) -> np.ndarray:
    """Which device rows HTA analyses: a stream other than -1, and with `drop_last_step`
    (two or more ProfilerSteps in the trace) a launch before the last step began."""
    keep = stream != -1
    if drop_last_step:
        keep &= launch < last_step_us  # False for every row when the rank has no step (NaN)
    return keep


def id_ranges(ids: np.ndarray, excluded: np.ndarray) -> list[list[int]]:
    """The ids where `excluded` holds (ids ascending), as [start, end) runs of consecutive ids."""
    sel = ids[excluded]
    if not len(sel):
        return []
    breaks = np.flatnonzero(np.diff(sel) != 1)
    starts = np.concatenate([[sel[0]], sel[breaks + 1]])
    ends = np.concatenate([sel[breaks], [sel[-1]]]) + 1
    return [[int(a), int(b)] for a, b in zip(starts.tolist(), ends.tolist())]

