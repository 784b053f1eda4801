"""Sort one rank's Kineto events into columns: GPU kernels, copies, CPU ops, names.

One pass over the event list; each event costs a few dict look-ups and list
appends, and `python_function` events (often most of a file) are dropped after
one comparison unless asked for. Everything after this pass is numpy.
Bad events (not objects, missing or non-numeric times, negative durations) are
counted and skipped, never fatal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

GPU_KERNEL_CATS = frozenset({"kernel", "Kernel"})
GPU_COPY_CATS = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
CPU_OP_CATS = frozenset({"cpu_op", "user_annotation", "Operator", "python_function"})
PYTHON_CAT = "python_function"
_COMM_NAME = re.compile(r"nccl|rccl", re.I)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_TS_US = 4e15   # |ts| beyond this (year ~2096 in epoch us) is garbage, not a time
MAX_DUR_US = 1e15  # so that any end, rebased to ns, still fits in int64


def clean_name(value: Any) -> str:
    """A display name: a string with control characters replaced, never empty."""
    s = value if isinstance(value, str) else ("" if value is None else str(value))
    if _CONTROL.search(s):
        s = _CONTROL.sub("\ufffd", s)
    return s or "(unnamed)"


def is_comm_kernel(name: str) -> bool:
    """HTA's rule: a GPU kernel whose name mentions NCCL (or RCCL) is communication."""
    return _COMM_NAME.search(name) is not None


@dataclass
class Columns:
    """Parallel lists of one kind of interval event."""

    ts: list[float] = field(default_factory=list)   # us
    dur: list[float] = field(default_factory=list)  # us
    name: list[str] = field(default_factory=list)
    where: list[Any] = field(default_factory=list)  # (device, stream) for GPU, (pid, tid) for CPU
    ext: list[Any] = field(default_factory=list)    # External id (any JSON value)
    args: list[Any] = field(default_factory=list)   # args dict where it matters, else None
    cat: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class RankEvents:
    """Everything the importer needs from one rank's file."""

    kernels: Columns = field(default_factory=Columns)
    copies: Columns = field(default_factory=Columns)
    cpu_ops: Columns = field(default_factory=Columns)
    process_names: dict[str, str] = field(default_factory=dict)
    thread_names: dict[tuple[str, str], str] = field(default_factory=dict)
    comm_args: dict[Any, dict[str, Any]] = field(default_factory=dict)  # External id -> record_param_comms args
    skipped: int = 0
    total: int = 0

    @property
    def min_ts(self) -> float | None:
        lows = [min(c.ts) for c in (self.kernels, self.copies, self.cpu_ops) if len(c)]
        return min(lows) if lows else None


def _key(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _number(value: Any) -> float:
    """A finite float from a JSON number or numeric string; NaN when it is neither."""
    if type(value) is float or type(value) is int:
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def extract(events: list[Any], *, include_python: bool = False) -> RankEvents:
    """One pass over a rank's events."""
    out = RankEvents(total=len(events))
    kernels, copies, ops = out.kernels, out.copies, out.cpu_ops
    skipped = 0
    for ev in events:
        if type(ev) is not dict:
            skipped += 1
            continue
        cat = ev.get("cat")
        if type(cat) is not str:
            cat = ""
        elif cat == PYTHON_CAT and not include_python:
            continue
        ph = ev.get("ph")
        if ph != "X":
            if ph == "M":
                _metadata(out, ev)
            continue
        ts = ev.get("ts")
        dur = ev.get("dur", 0)
        if type(ts) is not float or type(dur) is not float:
            ts, dur = _number(ts), _number(dur)
        if not (0 <= dur < MAX_DUR_US and -MAX_TS_US < ts < MAX_TS_US):
            skipped += 1  # NaN fails every comparison
            continue
        args = ev.get("args")
        if type(args) is not dict:
            args = {}
        if cat in GPU_KERNEL_CATS:
            target = kernels
            where = (_key(args.get("device", ev.get("pid"))), _key(args.get("stream", ev.get("tid"))))
            name = clean_name(ev.get("name"))
            keep_args = args if is_comm_kernel(name) else None
        elif cat in GPU_COPY_CATS:
            target = copies
            where = (_key(args.get("device", ev.get("pid"))), _key(args.get("stream", ev.get("tid"))))
            name = clean_name(ev.get("name"))
            keep_args = args
        elif cat in CPU_OP_CATS:
            target = ops
            where = (_key(ev.get("pid")), _key(ev.get("tid")))
            name = clean_name(ev.get("name"))
            keep_args = None
            if name == "record_param_comms" or "Collective name" in args:
                keep_args = args
                ext_id = args.get("External id")
                if ext_id is not None:
                    out.comm_args[_key(ext_id)] = args
        else:
            continue
        target.ts.append(ts)
        target.dur.append(dur)
        target.name.append(name)
        target.where.append(where)
        target.ext.append(args.get("External id"))
        target.args.append(keep_args)
        target.cat.append(cat)
    out.skipped = skipped
    return out


def _metadata(out: RankEvents, ev: dict[str, Any]) -> None:
    args = ev.get("args")
    if type(args) is not dict or "name" not in args:
        return
    kind = ev.get("name")
    if kind == "process_name":
        out.process_names[_key(ev.get("pid"))] = clean_name(args["name"])
    elif kind == "thread_name":
        out.thread_names[(_key(ev.get("pid")), _key(ev.get("tid")))] = clean_name(args["name"])


def to_ns(ts_us: list[float], t0_us: float) -> np.ndarray:
    """Microsecond floats to int64 ns from `t0_us` (Kineto writes us with ns decimals)."""
    return np.rint((np.asarray(ts_us, dtype=np.float64) - t0_us) * 1000.0).astype(np.int64)


def dur_ns(dur_us: list[float]) -> np.ndarray:
    return np.rint(np.asarray(dur_us, dtype=np.float64) * 1000.0).astype(np.int64)
