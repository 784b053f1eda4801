"""One rank's Kineto events as columns: GPU kernels, copies, CPU ops, in file order.

Every reader ends here, in the same shape (`RankEvents`): times as float64 arrays,
names, places ((device, stream) or (pid, tid)), External ids and categories as integer
codes into small per-rank vocabularies, and the args of the few events that need them
(NCCL kernels, collective CPU ops) in a sparse row -> args map. The importer then works
on whole columns. Three producers:
- the compiled byte scanner's arrays (kineto.scanned), for well-formed files;
- msgspec's typed events (`_extract_typed`), for files the scanner refuses;
- plain JSON values (`_extract_dicts`), for files only the tolerant parsers read.
`python_function` events (often most of a file) are dropped unless asked for. Bad
events (not objects, missing or non-numeric times, negative durations) are counted and
skipped, never fatal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.interop.kineto.hta import hta_correlation, hta_stream, rank_marks

# device activity, as each device kind's profiler writes it: CUDA and ROCm/HIP `kernel`, MTIA
# `mtia_ccp_events` (its DMA too: names `dma...`), and the device side of a synchronisation
# (`cuda_sync`: "Stream Sync", "Event Sync") that holds a stream busy
GPU_KERNEL_CATS = frozenset({"kernel", "Kernel", "mtia_ccp_events", "cuda_sync"})
GPU_COPY_CATS = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
CPU_OP_CATS = frozenset({"cpu_op", "user_annotation", "Operator", "python_function"})
# read only for Holistic Trace Analysis's selection of device events (kineto.hta), not imported:
# the host side of a launch (its `correlation` names the device event) and Kineto's device copies
# of user annotations (a ProfilerStep's device copy starts later than the CPU one)
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "xpu_runtime", "xpu_driver", "mtia_runtime", "glow_runtime",
                         "privateuse1_runtime", "privateuse1_driver"})
ANNOTATION_CAT = "gpu_user_annotation"
PYTHON_CAT = "python_function"
MEMORY_CAT = "cpu_instant_event"  # with name "[memory]": an allocator sample (profile_memory=True)
MEMORY_NAME = "[memory]"
CUDA_DEVICE_TYPE = 1
KERNEL, COPY, CPU_OP, MEMORY, LAUNCH, ANNOTATION = 0, 1, 2, 3, 4, 5  # event classes
_COMM_NAME = re.compile(r"nccl|rccl", re.I)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_TS_US = 4e15   # |ts| beyond this (year ~2096 in epoch us) is garbage, not a time
MAX_DUR_US = 1e15  # so that any end, rebased to ns, still fits in int64


def class_of(cat: str, include_python: bool) -> int:
    """KERNEL, COPY, CPU_OP, MEMORY, LAUNCH or ANNOTATION for a category the importer reads, else -1."""
    if cat in GPU_KERNEL_CATS:
        return KERNEL
    if cat in GPU_COPY_CATS:
        return COPY
    if cat in CPU_OP_CATS and (include_python or cat != PYTHON_CAT):
        return CPU_OP
    if cat in LAUNCH_CATS:
        return LAUNCH
    if cat == ANNOTATION_CAT:
        return ANNOTATION
    return MEMORY if cat == MEMORY_CAT else -1


def clean_name(value: Any) -> str:
    """A display name: a string with control characters replaced, never empty."""
    s = value if isinstance(value, str) else ("" if value is None else str(value))
    if _CONTROL.search(s):
        s = _CONTROL.sub("\ufffd", s)
    return s or "(unnamed)"


def is_comm_kernel(name: str) -> bool:
    """HTA's rule: a GPU kernel whose name mentions NCCL (or RCCL) is communication."""
    return _COMM_NAME.search(name) is not None


def int_or(value: Any, default: int) -> int:
    """An int argument (bytes, message sizes), or `default` when it is not one."""
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return v if -(1 << 62) < v < (1 << 62) else default


_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass
class Columns:
    """One kind of interval event, column by column, in file order."""

    ts: np.ndarray = field(default_factory=lambda: _EMPTY_F)      # us, float64
    dur: np.ndarray = field(default_factory=lambda: _EMPTY_F)     # us, float64
    name: np.ndarray = field(default_factory=lambda: _EMPTY_I)    # codes into RankEvents.names
    place: np.ndarray = field(default_factory=lambda: _EMPTY_I)   # codes into RankEvents.places
    ext: np.ndarray = field(default_factory=lambda: _EMPTY_I)     # External id codes, -1 for none
    cat: np.ndarray = field(default_factory=lambda: _EMPTY_I)     # codes into RankEvents.cats
    nbytes: np.ndarray = field(default_factory=lambda: _EMPTY_I)  # args "bytes" of copies (0 when absent)
    corr: np.ndarray = field(default_factory=lambda: _EMPTY_I)    # args "correlation", -1 when absent
    stream: np.ndarray = field(default_factory=lambda: _EMPTY_I)  # args "stream" as HTA reads it (kineto.hta)
    launch: np.ndarray = field(default_factory=lambda: _EMPTY_F)  # us: when HTA sees it launched (kineto.hta)
    args: dict[int, Any] = field(default_factory=dict)            # row -> args (dict or Args) where it matters

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class RankEvents:
    """Everything the importer needs from one rank's file."""

    kernels: Columns = field(default_factory=Columns)
    copies: Columns = field(default_factory=Columns)
    cpu_ops: Columns = field(default_factory=Columns)
    names: list[str] = field(default_factory=list)             # clean display names
    places: list[tuple[Any, Any]] = field(default_factory=list)  # (device, stream) or (pid, tid): ints or strings
    cats: list[str] = field(default_factory=list)
    n_ext: int = 0                                              # distinct External ids
    process_names: dict[str, str] = field(default_factory=dict)
    thread_names: dict[tuple[str, str], str] = field(default_factory=dict)
    memory: tuple[list[float], list[Any], list[float]] = field(default_factory=lambda: ([], [], []))  # ts us, device, bytes
    comm_args: dict[int, Any] = field(default_factory=dict)    # External id code -> record_param_comms args
    step_names: frozenset[str] = frozenset()                    # names containing ProfilerStep (kineto.hta)
    last_step_us: float = math.nan                              # start of the last ProfilerStep, as HTA sees it
    skipped: int = 0
    total: int = 0

    @property
    def name_is_comm(self) -> np.ndarray:
        """Per name code: whether it is a communication kernel's name."""
        return np.array([is_comm_kernel(n) for n in self.names] or [False], dtype=bool)

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
    """Clean display names, computed once per distinct raw name."""

    def __init__(self) -> None:
        self.cache: dict[Any, str] = {}

    def get(self, raw: Any) -> str:
        try:
            hit = self.cache.get(raw)
        except TypeError:  # unhashable (a list or object as a name)
            hit = None
            raw = str(raw)
        if hit is None:
            hit = self.cache[raw] = clean_name(raw)
        return hit


def _place(a: Any, b: Any) -> tuple[Any, Any]:
    """A hashable (device, stream) or (pid, tid) key: ints and strings as they are."""
    return (a if type(a) is int or type(a) is str else _key(a), b if type(b) is int or type(b) is str else _key(b))


def codes(values: list[Any], vocab: dict[Any, int]) -> np.ndarray:
    """Integer codes of `values`, growing `vocab` (value -> code) in order of appearance."""
    return np.fromiter((vocab.setdefault(v, len(vocab)) for v in values), dtype=np.int64, count=len(values))


def split(out: RankEvents, cls: np.ndarray, cols: dict[str, np.ndarray], args: dict[int, Any]) -> None:
    """Rows of every class into out.kernels / copies / cpu_ops (file order kept); launches and
    device annotations only serve HTA's selection of device rows (kineto.hta)."""
    device = (cls == KERNEL) | (cls == COPY)
    stream = cols["stream"]
    if device.any() and not (stream[device] != -1).any():
        # no device event names its stream (older ROCm builds wrote no args): HTA fails on such a
        # rank; count them all, each on the stream its row shows
        stream = np.where(device, 0, stream)
    launch, out.step_names, out.last_step_us = rank_marks(cols["ts"], cols["name"], out.names, cols["corr"], stream,
                                                          device)
    cols = {**cols, "stream": stream, "launch": launch}
    pos = np.zeros(len(cls), dtype=np.int64)
    for c, name in ((KERNEL, "kernels"), (COPY, "copies"), (CPU_OP, "cpu_ops")):
        rows = np.flatnonzero(cls == c)
        if not len(rows):
            continue
        pos[rows] = np.arange(len(rows))
        local = {int(pos[i]): a for i, a in args.items() if cls[i] == c}
        setattr(out, name, Columns(**{k: v[rows] for k, v in cols.items()}, args=local))


def _finish(out: RankEvents, cls: list[int], ts: list[float] | np.ndarray, dur: list[float] | np.ndarray,
            names: list[str], where: list[tuple[Any, Any]], ext: list[Any], cats: list[str], nbytes: list[int],
            corr: list[int], stream: list[int], args: dict[int, Any], comm_args: dict[str, Any]) -> RankEvents:
    """Per-event lists (kept rows, file order) -> codes and columns."""
    name_vocab: dict[str, int] = {}
    place_vocab: dict[tuple[Any, Any], int] = {}
    ext_vocab: dict[str, int] = {}
    cat_vocab: dict[str, int] = {}
    ext_codes = np.fromiter((-1 if x is None else ext_vocab.setdefault(_key(x), len(ext_vocab)) for x in ext),
                            dtype=np.int64, count=len(ext))
    cols = {"ts": np.asarray(ts, dtype=np.float64), "dur": np.asarray(dur, dtype=np.float64),
            "name": codes(names, name_vocab), "place": codes(where, place_vocab), "ext": ext_codes,
            "cat": codes(cats, cat_vocab), "nbytes": np.asarray(nbytes, dtype=np.int64),
            "corr": np.asarray(corr, dtype=np.int64), "stream": np.asarray(stream, dtype=np.int64)}
    out.names, out.places, out.cats, out.n_ext = list(name_vocab), list(place_vocab), list(cat_vocab), len(ext_vocab)
    out.comm_args = {ext_vocab[k]: v for k, v in comm_args.items() if k in ext_vocab}
    split(out, np.asarray(cls, dtype=np.int64), cols, args)
    return out


def extract(events: list[Any], *, include_python: bool = False) -> RankEvents:
    """One pass over a rank's events (dicts, or the typed events of msgspec)."""
    from explorer.interop.kineto.schema import Event

    if events and type(events[0]) is Event:
        return _extract_typed(events, include_python)
    return _extract_dicts(events, include_python)


def _extract_typed(events: list[Any], include_python: bool) -> RankEvents:
    """msgspec `Event`s, column by column. Anything unexpected (a list as a category or
    name, a string timestamp) sends the file down the per-event tolerant path instead."""
    try:
        return _extract_columns(events, include_python)
    except (TypeError, ValueError, AttributeError):
        from explorer.interop.kineto.schema import as_dicts

        return _extract_dicts(as_dicts(events), include_python)


def _extract_columns(events: list[Any], include_python: bool) -> RankEvents:
    """The kept events' fields as lists (one comprehension each), then numpy for times
    and a name per distinct raw name. Anything unexpected raises (-> the tolerant path)."""
    out = RankEvents(total=len(events))
    wanted = (GPU_KERNEL_CATS | GPU_COPY_CATS | (CPU_OP_CATS if include_python else CPU_OP_CATS - {PYTHON_CAT})
              | LAUNCH_CATS | {MEMORY_CAT, ANNOTATION_CAT})
    # TypeError (an unhashable category) -> tolerant path
    rows = [ev for ev in events if ev.cat in wanted or ev.ph == "M"]
    if not rows:
        return out
    cat_c, ph_c, ts_c, dur_c = [e.cat for e in rows], [e.ph for e in rows], [e.ts for e in rows], [e.dur for e in rows]
    name_c, pid_c, tid_c, args_c = [e.name for e in rows], [e.pid for e in rows], [e.tid for e in rows], [e.args for e in rows]
    del rows
    ph = np.empty(len(ph_c), dtype=object)
    ph[:] = ph_c
    for i in np.flatnonzero(ph == "M").tolist():
        a = args_c[i]
        if a is not None and a.name is not None:
            _metadata(out, {"name": name_c[i], "pid": pid_c[i], "tid": tid_c[i], "args": {"name": a.name}})
    cls_of = {c: class_of(c, include_python) for c in set(cat_c) if c is not None}
    cls = np.fromiter((cls_of.get(c, -1) for c in cat_c), dtype=np.int64, count=len(cat_c))
    for i in np.flatnonzero(cls == MEMORY).tolist():
        a = args_c[i]
        if ph_c[i] in ("i", "I") and name_c[i] == MEMORY_NAME and a is not None:
            _memory_sample(out, ts_c[i], a.device_type, a.device_id, a.total_allocated)
    idx = np.flatnonzero((ph == "X") & (cls >= 0) & (cls != MEMORY))
    ts = np.array([ts_c[i] for i in idx.tolist()], dtype=np.float64)  # ValueError/TypeError -> tolerant path
    dur = np.array([0.0 if dur_c[i] is None else dur_c[i] for i in idx.tolist()], dtype=np.float64)
    if ts.ndim != 1 or dur.ndim != 1:  # lists as times
        raise ValueError("times are not numbers")
    ok = (dur >= 0) & (dur < MAX_DUR_US) & (ts > -MAX_TS_US) & (ts < MAX_TS_US)
    out.skipped = int((~ok).sum())
    keep = np.flatnonzero(ok)
    idx, ts, dur = idx[keep].tolist(), ts[keep], dur[keep]
    kcls = cls[idx].tolist()
    args = [args_c[i] for i in idx]
    names = _Names()
    table = {n: names.get(n) for n in {name_c[i] for i in idx}}  # TypeError (unhashable) -> tolerant path
    clean = [table[name_c[i]] for i in idx]
    comm = {n: is_comm_kernel(n) for n in set(clean)}
    where: list[tuple[Any, Any]] = []
    ext: list[Any] = []
    nbytes: list[int] = []
    corr: list[int] = []
    stream: list[int] = []
    kept_args: dict[int, Any] = {}
    comm_args: dict[str, Any] = {}
    for j, (i, c, a, n) in enumerate(zip(idx, kcls, args, clean)):
        if a is None:
            where.append((pid_c[i], tid_c[i]))
            ext.append(None)
            nbytes.append(0)
            corr.append(-1)
            stream.append(-1)
            continue
        ext.append(a.external_id)
        corr.append(hta_correlation(a.correlation))
        stream.append(hta_stream(a.stream))
        if c == LAUNCH or c == ANNOTATION:
            where.append((pid_c[i], tid_c[i]))
            nbytes.append(0)
        elif c == CPU_OP:
            where.append((pid_c[i], tid_c[i]))
            nbytes.append(0)
            if a.collective_name is not None or n == "record_param_comms":
                kept_args[j] = a
                if a.external_id is not None:
                    comm_args[_key(a.external_id)] = a
        else:
            where.append((pid_c[i] if a.device is None else a.device, tid_c[i] if a.stream is None else a.stream))
            nbytes.append(int_or(a.bytes, 0) if c == COPY else 0)
            if c == KERNEL and comm[n]:
                kept_args[j] = a
    norm = {w: _place(*w) for w in set(where)}  # TypeError (unhashable id) -> tolerant path
    where = [norm[w] for w in where]
    return _finish(out, kcls, ts, dur, clean, where, ext, [cat_c[i] for i in idx], nbytes, corr, stream, kept_args,
                   comm_args)


def _extract_dicts(events: list[Any], include_python: bool) -> RankEvents:
    """The tolerant path, for files the fast parsers refused: plain JSON values."""
    out = RankEvents(total=len(events))
    names = _Names()
    cls_l: list[int] = []
    ts_l: list[float] = []
    dur_l: list[float] = []
    name_l: list[str] = []
    where_l: list[tuple[Any, Any]] = []
    ext_l: list[Any] = []
    cat_l: list[str] = []
    bytes_l: list[int] = []
    corr_l: list[int] = []
    stream_l: list[int] = []
    kept_args: dict[int, Any] = {}
    comm_args: dict[str, Any] = {}
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
        c = class_of(cat, include_python)
        if c < 0 or c == MEMORY:
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
        name = names.get(ev.get("name"))
        j = len(cls_l)
        if c == LAUNCH or c == ANNOTATION:
            where = _place(ev.get("pid"), ev.get("tid"))
            bytes_l.append(0)
        elif c == CPU_OP:
            where = _place(ev.get("pid"), ev.get("tid"))
            if name == "record_param_comms" or "Collective name" in args:
                kept_args[j] = args
                ext_id = args.get("External id")
                if ext_id is not None:
                    comm_args[_key(ext_id)] = args
            bytes_l.append(0)
        else:
            where = _place(args.get("device", ev.get("pid")), args.get("stream", ev.get("tid")))
            if c == KERNEL and is_comm_kernel(name):
                kept_args[j] = args
            bytes_l.append(int_or(args.get("bytes"), 0) if c == COPY else 0)
        cls_l.append(c)
        ts_l.append(ts)
        dur_l.append(dur)
        name_l.append(name)
        where_l.append(where)
        ext_l.append(args.get("External id"))
        cat_l.append(cat)
        corr_l.append(hta_correlation(args.get("correlation")))
        stream_l.append(hta_stream(args.get("stream")))
    out.skipped = skipped
    return _finish(out, cls_l, ts_l, dur_l, name_l, where_l, ext_l, cat_l, bytes_l, corr_l, stream_l, kept_args,
                   comm_args)


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


def to_ns(ts_us: np.ndarray | list[float], t0_us: float) -> np.ndarray:
    """Microsecond floats to int64 ns from `t0_us` (Kineto writes us with ns decimals)."""
    return np.rint((np.asarray(ts_us, dtype=np.float64) - t0_us) * 1000.0).astype(np.int64)


def dur_ns(dur_us: np.ndarray | list[float]) -> np.ndarray:
    return np.rint(np.asarray(dur_us, dtype=np.float64) * 1000.0).astype(np.int64)
