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
MEMORY_CAT = "cpu_instant_event"  # with name "[memory]": an allocator sample (profile_memory=True)
MEMORY_NAME = "[memory]"
CUDA_DEVICE_TYPE = 1
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

    ts: Any = field(default_factory=list)   # us: a list, or a float64 array from the fast path
    dur: Any = field(default_factory=list)  # us
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
    memory: tuple[list[float], list[Any], list[float]] = field(default_factory=lambda: ([], [], []))  # ts us, device, bytes
    comm_args: dict[Any, Any] = field(default_factory=dict)  # External id -> record_param_comms args (dict or Args)
    skipped: int = 0
    total: int = 0

    @property
    def min_ts(self) -> float | None:  # columns hold only finite floats by now
        lows = [float(np.min(c.ts)) for c in (self.kernels, self.copies, self.cpu_ops) if len(c)]
        if self.memory[0]:
            lows.append(min(self.memory[0]))
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


class _Names:
    """Clean display names and the NCCL test, computed once per distinct raw name."""

    def __init__(self) -> None:
        self.cache: dict[Any, tuple[str, bool]] = {}

    def get(self, raw: Any) -> tuple[str, bool]:
        try:
            hit = self.cache.get(raw)
        except TypeError:  # unhashable (a list or object as a name)
            hit = None
            raw = str(raw)
        if hit is None:
            name = clean_name(raw)
            hit = self.cache[raw] = (name, is_comm_kernel(name))
        return hit


def _place(a: Any, b: Any) -> tuple[Any, Any]:
    """A hashable (device, stream) or (pid, tid) key: ints and strings as they are."""
    return (a if type(a) is int or type(a) is str else _key(a), b if type(b) is int or type(b) is str else _key(b))


def extract(events: list[Any], *, include_python: bool = False) -> RankEvents:
    """One pass over a rank's events (dicts, or the typed events of the fast parser)."""
    from explorer.interop.kineto_schema import Event

    if events and type(events[0]) is Event:
        return _extract_typed(events, include_python)
    return _extract_dicts(events, include_python)


def _extract_typed(events: list[Any], include_python: bool) -> RankEvents:
    """The fast path over msgspec `Event`s: bucket by category in one tight loop, then
    build each bucket's columns with comprehensions and numpy. Anything unexpected
    (a list as a category or name, a string timestamp) sends the file down the
    per-event tolerant path instead."""
    try:
        return _extract_columns(events, include_python)
    except (TypeError, ValueError, AttributeError):
        from explorer.interop.kineto_schema import as_dicts

        return _extract_dicts(as_dicts(events), include_python)


_NO_ARGS = (None, None, None, None)


def _extract_columns(events: list[Any], include_python: bool) -> RankEvents:
    """Column by column: the kept events' fields as lists (one comprehension each), then
    per category numpy arrays for times, a name table per distinct name and a place per
    distinct (device, stream) or (pid, tid). Anything unexpected raises, and the caller
    takes the tolerant per-event path instead."""
    out = RankEvents(total=len(events))
    wanted = GPU_KERNEL_CATS | GPU_COPY_CATS | (CPU_OP_CATS if include_python else CPU_OP_CATS - {PYTHON_CAT}) | {MEMORY_CAT}
    # TypeError (an unhashable category) -> tolerant path
    rows = [ev for ev in events if ev.cat in wanted or ev.ph == "M"]
    if not rows:
        return out
    # one comprehension per field: cheaper than building and transposing a tuple per event
    cat_c, ph_c, ts_c, dur_c = [e.cat for e in rows], [e.ph for e in rows], [e.ts for e in rows], [e.dur for e in rows]
    name_c, pid_c, tid_c, args_c = [e.name for e in rows], [e.pid for e in rows], [e.tid for e in rows], [e.args for e in rows]
    del rows
    ph = np.empty(len(ph_c), dtype=object)
    ph[:] = ph_c
    for i in np.flatnonzero(ph == "M").tolist():
        a = args_c[i]
        if a is not None and a.name is not None:
            _metadata(out, {"name": name_c[i], "pid": pid_c[i], "tid": tid_c[i], "args": {"name": a.name}})
    is_x = ph == "X"
    kinds = sorted(set(cat_c) & wanted)
    code_of = {k: i for i, k in enumerate(kinds)}
    cat = np.fromiter((code_of.get(c, -1) for c in cat_c), dtype=np.int32, count=len(cat_c))
    plain_ids = {type(x) for x in pid_c} | {type(x) for x in tid_c} <= {int, str}
    names = _Names()
    skipped = 0
    for code, kind in enumerate(kinds):
        if kind == MEMORY_CAT:
            for i in np.flatnonzero(cat == code).tolist():
                a = args_c[i]
                if ph_c[i] in ("i", "I") and name_c[i] == MEMORY_NAME and a is not None:
                    _memory_sample(out, ts_c[i], a.device_type, a.device_id, a.total_allocated)
            continue
        idx = np.flatnonzero(is_x & (cat == code)).tolist()
        if not idx:
            continue
        target = out.kernels if kind in GPU_KERNEL_CATS else out.copies if kind in GPU_COPY_CATS else out.cpu_ops
        ts = np.array([ts_c[i] for i in idx], dtype=np.float64)  # ValueError/TypeError -> tolerant path
        dur = np.array([0.0 if dur_c[i] is None else dur_c[i] for i in idx], dtype=np.float64)
        if ts.ndim != 1 or dur.ndim != 1:  # lists as times
            raise ValueError("times are not numbers")
        ok = (dur >= 0) & (dur < MAX_DUR_US) & (ts > -MAX_TS_US) & (ts < MAX_TS_US)
        if not ok.all():
            skipped += int((~ok).sum())
            keep = np.flatnonzero(ok)
            idx = [idx[k] for k in keep.tolist()]
            ts, dur = ts[keep], dur[keep]
            if not idx:
                continue
        args = [args_c[i] for i in idx]
        # each args struct visited once: (External id, device, stream, Collective name)
        fields = [_NO_ARGS if a is None else (a.external_id, a.device, a.stream, a.collective_name) for a in args]
        ext, device, stream, coll = zip(*fields)
        raw_names = [name_c[i] for i in idx]
        table = {n: names.get(n) for n in set(raw_names)}  # TypeError (unhashable) -> tolerant path
        resolved = [table[n] for n in raw_names]
        if target is out.cpu_ops:
            where = [(pid_c[i], tid_c[i]) for i in idx]
        else:
            where = [(pid_c[i] if d is None else d, tid_c[i] if st is None else st) for i, d, st in zip(idx, device, stream)]
        if not plain_ids or target is not out.cpu_ops:  # GPU ids come from args: check them too
            norm = {w: _place(*w) for w in set(where)}  # TypeError (unhashable id) -> tolerant path
            where = [norm[w] for w in where]
        if target is out.kernels:
            keep_args = [a if r[1] else None for a, r in zip(args, resolved)]  # Args read like dicts
        elif target is out.copies:
            keep_args = args
        else:
            keep_args = [a if a is not None and (c is not None or r[0] == "record_param_comms") else None
                         for a, c, r in zip(args, coll, resolved)]
            for a in keep_args:
                if a is not None and a.get("External id") is not None:
                    out.comm_args[_key(a.get("External id"))] = a
        target.ts.append(ts)  # numpy chunks, concatenated below
        target.dur.append(dur)
        target.name.extend([r[0] for r in resolved])
        target.where.extend(where)
        target.ext.extend(ext)
        target.args.extend(keep_args)
        target.cat.extend([kind] * len(idx))
    for target in (out.kernels, out.copies, out.cpu_ops):
        target.ts = np.concatenate(target.ts) if target.ts else np.zeros(0)
        target.dur = np.concatenate(target.dur) if target.dur else np.zeros(0)
    out.skipped = skipped
    return out


def _extract_dicts(events: list[Any], include_python: bool) -> RankEvents:
    """The tolerant path, for files the fast parser refused: plain JSON values."""
    out = RankEvents(total=len(events))
    kernels, copies, ops = out.kernels, out.copies, out.cpu_ops
    names = _Names()
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
            elif cat == MEMORY_CAT and ev.get("name") == MEMORY_NAME and type(ev.get("args")) is dict:
                a = ev["args"]
                _memory_sample(out, ev.get("ts"), a.get("Device Type"), a.get("Device Id"), a.get("Total Allocated"))
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
        if cat in GPU_KERNEL_CATS or cat in GPU_COPY_CATS:
            is_kernel = cat in GPU_KERNEL_CATS
            target = kernels if is_kernel else copies
            where = _place(args.get("device", ev.get("pid")), args.get("stream", ev.get("tid")))
            name, comm = names.get(ev.get("name"))
            keep_args = args if comm or not is_kernel else None
        elif cat in CPU_OP_CATS:
            target = ops
            where = _place(ev.get("pid"), ev.get("tid"))
            name, _ = names.get(ev.get("name"))
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


def _memory_sample(out: RankEvents, ts: Any, device_type: Any, device: Any, total: Any) -> None:
    """One allocator sample of a GPU: memory allocated on `device` from `ts` on."""
    if device_type != CUDA_DEVICE_TYPE or type(device) is not int:
        return
    t, v = _number(ts), _number(total)
    if -MAX_TS_US < t < MAX_TS_US and 0 <= v < 1e18:
        out.memory[0].append(t)
        out.memory[1].append(device)
        out.memory[2].append(v)


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
