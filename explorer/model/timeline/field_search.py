"""Field search: `opcode:MultiplyMoving dtype:fp8 dur>10us kernel:matmul_* chip:3`.

A query is terms joined by AND. A term is `key:value` (or `key=value`), a comparison
`key>value` / `>=` / `<` / `<=` for numbers, `-term` negates one, `a,b` lists
alternatives, and `*`/`?` are wildcards (case-insensitive; without one the value
must match whole). A bare word keeps the plain search's meaning (a substring of the
name an event is shown with, or of its kernel, op or layer). Keys:

  name opcode dtype kernel op layer kind src dst engine (or track) type chip core
  track_id id dur start bytes flops partitions opdur opstart

`type:` is instruction, dma, kernel or collective. Times take ns/us/ms/s, sizes
B/KB/KiB/MB/MiB/GB/GiB, counts k/M/G. Events are matched as `explorer.model.timeline.search`
matches names: once per distinct name, then one vectorised pass per table, batch by
batch, so a 28M-instruction trace costs a few numpy passes (run it off the GUI thread).
`kernel:`, `op:` and `layer:` alone find kernels (and collectives by op or layer), like
the plain search; with an event-level term (opcode, dur, bytes, ...) they also filter
the instructions and transfers inside those kernels. `opdur` and `opstart` compare the
duration and start of an event's op (a kernel's or collective's own op; an instruction's or
transfer's through its kernel): `op:attention opdur>1ms` finds the kernels of the attention
ops that took over 1 ms, what the statistics' per-op histogram counts. `track_id:4,5` keeps
those rows (the ids of the CLI's --tracks).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np

from explorer.model import columns
from explorer.model.table_chunks import batches
from explorer.model.timeline import colour_codes
from explorer.model.timeline.event_table import EventTable
from explorer.model.timeline.search import SearchHits, _match_masks, hits_of_masks
from explorer.model.timeline.trace_index import TraceIndex
from simcore.errors import UserError

TYPES = {"instruction": "instructions", "instructions": "instructions", "dma": "dma", "kernel": "kernels",
         "kernels": "kernels", "collective": "collectives", "collectives": "collectives"}
NAME_KEYS = ("name", "opcode", "dtype", "kernel", "op", "layer", "kind", "src", "dst", "engine", "track", "type")
NUMBER_KEYS = ("chip", "core", "track_id", "id", "dur", "start", "bytes", "flops", "partitions", "opdur", "opstart")
TIME_KEYS = ("dur", "start", "opdur", "opstart")
KEYS = NAME_KEYS + NUMBER_KEYS
EVENT_LEVEL = {"opcode", "dtype", "dur", "bytes", "flops", "id", "src", "dst", "partitions", "start", "name", "engine", "track", "type"}
HELP = ("a search is words and fields like opcode:MultiplyMoving dtype:fp8 dur>10us kernel:matmul_* chip:3 "
        f"(fields: {', '.join(KEYS)})")

_TERM = re.compile(r"^(-?)([a-z_]+)(:|>=|<=|!=|=|>|<)(.+)$", re.I)
_NUM = re.compile(r"^(-?\d+(?:\.\d*)?|-?\.\d+)\s*([a-z]*)$", re.I)
_TIME_UNITS = {"": 1, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1e3, "kib": 2**10, "mb": 1e6, "mib": 2**20, "gb": 1e9, "gib": 2**30}
_COUNT_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


@dataclass(frozen=True)
class Term:
    key: str  # a field, or "text" for a bare word
    op: str  # ":" (match), ">", ">=", "<", "<=", "!="
    values: tuple[str, ...]
    negate: bool = False


def _number(key: str, text: str) -> float:
    m = _NUM.match(text.strip())
    units = _TIME_UNITS if key in TIME_KEYS else _SIZE_UNITS if key == "bytes" else _COUNT_UNITS
    if not m or m.group(2).lower() not in units:
        kind = "a time like 10us" if units is _TIME_UNITS else "a size like 64KiB" if units is _SIZE_UNITS else "a number"
        raise UserError(f"'{key}' needs {kind}, not '{text}'.")
    return float(m.group(1)) * units[m.group(2).lower()]


def parse(query: str) -> list[Term]:
    """The terms of a query; an unknown field or a bad value raises UserError (one sentence)."""
    terms: list[Term] = []
    for word in query.split():
        m = _TERM.match(word)
        if not m:
            terms.append(Term("text", ":", (word.lower(),)))
            continue
        neg, key, op, value = m.group(1) == "-", m.group(2).lower(), m.group(3), m.group(4)
        if key not in KEYS:
            raise UserError(f"unknown search field '{key}'; {HELP}.")
        op = ":" if op == "=" else op
        if op == "!=":
            op, neg = ":", not neg
        values = tuple(v for v in value.split(",") if v)
        if key in NAME_KEYS and op != ":":
            raise UserError(f"'{key}' is a name: use {key}:VALUE (wildcards * and ?), not '{op}'.")
        if key == "type":
            bad = [v for v in values if v.lower() not in TYPES]
            if bad:
                raise UserError(f"type:{bad[0]} is not one of instruction, dma, kernel, collective.")
        if key in NUMBER_KEYS:
            if op != ":" and len(values) != 1:
                raise UserError(f"'{word}' compares with one value.")
            for v in values:
                _number(key, v)
        terms.append(Term(key, op, values, neg))
    return terms


def is_field_query(query: str) -> bool:
    """Does the query use fields or comparisons (else the plain name search answers it)?"""
    return any(_TERM.match(w) for w in query.split())


def _pattern_hits(values: np.ndarray | list[str], patterns: tuple[str, ...]) -> np.ndarray:
    """Bool per distinct value: does it match one of the patterns (glob, case-insensitive, whole)?"""
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p.lower())})" for p in patterns), re.S)
    return np.array([bool(regex.match(str(v).lower())) for v in values], dtype=bool)


def _source_mask(events: EventTable, source: colour_codes.Source, hit: np.ndarray) -> np.ndarray:
    """Bool per sorted position: is the event's category (per `source`) one `hit` marks? Batch by batch."""
    out = np.empty(events.n, bool)
    for offset, c, _ in batches(events.table, source.columns):
        out[offset:offset + len(next(iter(c.values())))] = hit[source.local(c)]
    return out if events.order is None else out[events.order]


def _column_mask(events: EventTable, columns: tuple[str, ...], fn) -> np.ndarray:
    out = np.empty(events.n, bool)
    for offset, c, _ in batches(events.table, columns):
        out[offset:offset + len(next(iter(c.values())))] = fn(c)
    return out if events.order is None else out[events.order]


def _per_lane(index: TraceIndex, events: EventTable, fn) -> np.ndarray:
    """Bool per sorted position from a per-track predicate `fn(TrackInfo) -> bool`."""
    out = np.zeros(events.n, bool)
    for tid, (lo, hi) in events.bounds.items():
        info = index.tracks.get(tid)
        if info is not None and fn(info):
            out[lo:hi] = True
    return out


def _compare(x: np.ndarray, op: str, values: tuple[float, ...]) -> np.ndarray:
    if op == ":":
        return np.isin(x, np.array(values, dtype=x.dtype if x.dtype.kind in "iu" and all(v == int(v) for v in values) else np.float64))
    v = values[0]
    return {">": x > v, ">=": x >= v, "<": x < v, "<=": x <= v}[op]


NUMERIC_COLUMNS = {
    "id": {"instructions": "id", "dma": "id"},
    "bytes": {"instructions": "bytes", "dma": "bytes", "collectives": "bytes"},
    "flops": {"instructions": "flops", "kernels": "flops"},
    "partitions": {"dma": "partitions"},
}
NAME_COLUMNS = {
    "dtype": {"instructions": "dtype", "kernels": "dtype"},
    "src": {"dma": "src"},
    "dst": {"dma": "dst"},
    "kind": {"collectives": "kind"},
    "opcode": {"instructions": "opcode"},
}


def _term_mask(index: TraceIndex, tname: str, term: Term, event_level: bool) -> np.ndarray | None:
    """Bool per sorted position of `tname` for one term; None: the term cannot apply to that table."""
    events = index.tables[tname]
    key = term.key
    if key == "text":
        return _match_masks(index, term.values[0]).get(tname, np.zeros(events.n, bool))
    if key == "type":
        return np.full(events.n, tname in {TYPES[v.lower()] for v in term.values})
    if key in ("chip", "core", "track_id"):
        vals = tuple(_number(key, v) for v in term.values)
        return _per_lane(index, events, lambda info: bool(_compare(np.array([getattr(info, key)]), term.op, vals)[0]))
    if key in ("engine", "track"):
        names = sorted({i.name for i in index.tracks.values()})
        ok = {n for n, h in zip(names, _pattern_hits(names, term.values)) if h}
        return _per_lane(index, events, lambda info: info.name in ok)
    if key in ("dur", "start"):
        vals = tuple(_number(key, v) for v in term.values)
        if key == "start":
            vals = tuple(v + index.span[0] for v in vals)  # times count from the trace's start, as the ruler does
        out = np.empty(events.n, bool)
        for tid, (lo, hi) in events.bounds.items():
            s, d = events.lane_arrays(lo, hi)
            out[lo:hi] = _compare(d if key == "dur" else s, term.op, vals)
        return out
    if key in ("opdur", "opstart"):
        return _op_time_mask(index, tname, term, event_level)
    if key in NUMERIC_COLUMNS:
        col = NUMERIC_COLUMNS[key].get(tname)
        if col is None:
            return None
        vals = tuple(_number(key, v) for v in term.values)
        return _column_mask(events, (col,), lambda c: _compare(c[col], term.op, vals))
    if key in NAME_COLUMNS:
        col = NAME_COLUMNS[key].get(tname)
        if col is None:
            return None
        vocab = events.vocabulary(col)
        if vocab is None:
            codes, vocab = events.sorted_codes(col)
            return _pattern_hits(vocab, term.values)[codes]
        hit = _pattern_hits(vocab, term.values)
        return _column_mask(events, (col,), lambda c: hit[c[col]])
    if key in ("name", "kernel", "op", "layer"):
        if key != "name" and tname in ("instructions", "dma") and not event_level:
            return None  # kernel:/op:/layer: alone find kernels, not every instruction inside them
        if key == "kernel" and tname == "collectives":
            return None
        if index.kernel_ops is None and key != "name":
            return None
        mode = "opcode" if key == "name" else key
        src = colour_codes.sources({tname: events}, mode, index.kernel_ops)[tname]
        return _source_mask(events, src, _pattern_hits(src.values, term.values))
    raise UserError(f"unknown search field '{key}'; {HELP}.")


def _op_time_mask(index: TraceIndex, tname: str, term: Term, event_level: bool) -> np.ndarray | None:
    """`opdur`/`opstart`: compare each event's op's duration or start (None: the table has no op,
    or, like `op:` alone, instructions and transfers without an event-level term)."""
    h = index.kernel_ops
    if h is None or (tname in ("instructions", "dma") and not event_level):
        return None
    ops = index.trace.ops
    col = "dur_ns" if term.key == "opdur" else "start_ns"
    per_op = columns.num(ops, col).astype(np.float64) if ops.num_rows else np.zeros(0)
    vals = tuple(_number(term.key, v) for v in term.values)
    if term.key == "opstart":
        vals = tuple(v + index.span[0] for v in vals)  # from the trace's start, as `start`
    hit_op = np.append(_compare(per_op, term.op, vals), False)  # the last slot: no op (-1)
    events = index.tables[tname]
    if tname in ("kernels", "collectives"):
        return _column_mask(events, ("op_id",), lambda c: hit_op[h.op_row(c["op_id"])])
    if tname in ("instructions", "dma"):
        kernel_op = h.op_row(columns.num(index.trace.kernels, "op_id"))
        hit_kernel = np.append(hit_op[kernel_op], False)
        return _column_mask(events, ("kernel_id",), lambda c: hit_kernel[h.kernel_row(c["kernel_id"])])
    return None


def field_search(index: TraceIndex, query: str) -> SearchHits:
    """Every event matching all terms of `query`, as `SearchHits` (stepping and counts as the plain search)."""
    q = query.strip()
    terms = parse(q)
    lanes = [ln for _, ln in sorted(index.lanes.items())]
    event_level = any(t.key in EVENT_LEVEL for t in terms)
    masks: dict[str, np.ndarray] = {}
    for tname, events in index.tables.items():
        if not events.n or not terms:
            continue
        mask: np.ndarray | None = np.ones(events.n, bool)
        for term in terms:
            m = _term_mask(index, tname, term, event_level)
            if m is None:
                mask = None if not term.negate else mask
                if mask is None:
                    break
                continue
            mask &= ~m if term.negate else m
            if not mask.any():
                break
        if mask is not None:
            masks[tname] = mask
    return hits_of_masks(q, lanes, masks)
