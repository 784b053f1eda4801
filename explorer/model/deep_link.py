"""Deep links: one grammar for a place in a trace, shared by `trnx view --goto`, the links
`trnx summary` prints and the GUI's "Copy link".

    kernel:ID  instruction:ID  dma:ID  collective:ID  op:ID  op:NAME  t=1.2ms  t=1.2ms:1.5ms

Times are the trace's own nanoseconds (as in `--range`), with ns/us/ms/s; `op:NAME` goes
to the first op of that name. `resolve` turns a link into a `Target` (an event to select
and/or a range to show) from the timeline's index, with no analysis needed, so a link
opens as soon as the trace is shown; an unknown id is one sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from explorer.model import columns
from explorer.model.scope import parse_time
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from simcore.errors import UserError

KINDS = ("kernel", "instruction", "dma", "collective", "op")
GRAMMAR = "kernel:ID, instruction:ID, dma:ID, collective:ID, op:ID, op:NAME, t=TIME or t=START:END (e.g. t=1.2ms:1.5ms)"
POINT_WIDTH_NS = 10_000  # t=TIME shows this much around TIME
MARGIN = 0.05  # of the span: the timeline shows this much around the trace (view_state.Viewport), so a
# copied link of any range it shows opens; a link wholly beyond it is refused
ID_MAX = 2**63 - 1  # ids are int64: a longer number is no id the trace has


@dataclass(frozen=True)
class Link:
    kind: str  # one of KINDS, or "t"
    value: str  # the id or name; for "t" the time text
    t0: int | None = None
    t1: int | None = None

    def __str__(self) -> str:
        return f"t={self.value}" if self.kind == "t" else f"{self.kind}:{self.value}"


@dataclass(frozen=True)
class Target:
    """Where a link goes: a range to show, the row to scroll to, and the event or node to select."""

    t0: float
    t1: float
    track_id: int | None = None
    ref: EventRef | None = None
    node: str | None = None  # the operator tree's node ("op:3", "kernel:7"), when there is one


def parse(text: str) -> Link:
    """A link's kind and value; bad grammar raises UserError (one sentence)."""
    s = text.strip()
    if s.startswith("t="):
        body = s[2:]
        try:
            if ":" in body:
                a, b = body.split(":", 1)
                t0, t1 = parse_time(a), parse_time(b)
                if t1 <= t0:
                    raise UserError(f"the link '{s}' ends before it starts.")
                return Link("t", body, t0, t1)
            t = parse_time(body)
            return Link("t", body, t, t)
        except UserError as exc:
            if "ends before" in str(exc):
                raise
            raise UserError(f"'{s}' is not a link; links are {GRAMMAR}.") from None
    kind, sep, value = s.partition(":")
    if not sep or kind not in KINDS or not value:
        raise UserError(f"'{s}' is not a link; links are {GRAMMAR}.")
    if kind != "op" and not re.fullmatch(r"\d+", value):
        raise UserError(f"'{s}' is not a link: {kind}: takes a number (an id).")
    return Link(kind, value)


def _pad(t0: float, t1: float) -> tuple[float, float]:
    pad = max((t1 - t0) * 0.05, 20.0)
    return t0 - pad, t1 + pad


def resolve(index: TraceIndex, text: str | Link) -> Target:
    """Where `text` points in the trace behind `index`; an id it does not have is a UserError."""
    link = parse(text) if isinstance(text, str) else text
    if link.kind == "t":
        _check_inside(index, link)
        if link.t0 == link.t1:
            return Target(link.t0 - POINT_WIDTH_NS / 2, link.t0 + POINT_WIDTH_NS / 2)
        return Target(float(link.t0), float(link.t1))
    if link.kind != "op" and int(link.value) > ID_MAX:
        noun = {"dma": "DMA transfer", "op": "op"}.get(link.kind, link.kind)
        raise UserError(f"this trace has no {noun} with id {link.value}.")
    if link.kind in ("instruction", "dma"):
        ref = index.find_id(int(link.value))
        if ref is None or (link.kind == "dma") != (ref.table == "dma"):
            raise UserError(f"this trace has no {'DMA transfer' if link.kind == 'dma' else 'instruction'} with id {link.value}.")
        return _event(index, ref, f"{link.kind}:{link.value}")
    if link.kind == "kernel":
        ids = index.tables["kernels"].column("kernel_id")
        rows = np.flatnonzero(ids == int(link.value))
        if not len(rows):
            raise UserError(f"this trace has no kernel with id {link.value}.")
        return _event(index, EventRef("kernels", int(rows[0])), f"kernel:{link.value}")
    if link.kind == "collective":
        ev = index.tables["collectives"]
        rows = np.flatnonzero(ev.column("collective_id") == int(link.value))
        if not len(rows):
            raise UserError(f"this trace has no collective with id {link.value}.")
        t0 = float(ev.column("arrive_ns")[rows].min())
        t1 = float(ev.column("end_ns")[rows].max())
        ref = EventRef("collectives", int(rows[0]))
        lane, _ = index.locate(ref)
        return Target(*_pad(t0, t1), lane.track.track_id, ref, None)
    ops = index.trace.ops  # op:ID or op:NAME
    op_ids = columns.num(ops, "op_id")
    if link.value.isdigit() and (op_ids == int(link.value)).any():
        row = int(np.flatnonzero(op_ids == int(link.value))[0])
    else:
        names = np.array([str(v) for v in ops.column("name").to_pylist()], dtype=object)
        rows = np.flatnonzero(names == link.value)
        if not len(rows):
            raise UserError(f"this trace has no op named or numbered '{link.value}'.")
        starts = columns.num(ops, "start_ns")[rows]
        row = int(rows[np.argmin(starts)])
    start = float(columns.num(ops, "start_ns")[row])
    dur = float(columns.num(ops, "dur_ns")[row])
    return Target(*_pad(start, start + dur), None, None, f"op:{int(op_ids[row])}")


def _check_inside(index: TraceIndex, link: Link) -> None:
    """A time link wholly outside the trace (and the margin the timeline shows around it) is one
    sentence, not the trace's nearest end shown as if it were there (t=999s for t=999us)."""
    lo, hi = (float(x) for x in index.span)
    margin = MARGIN * (hi - lo)
    if link.t1 < lo - margin or link.t0 > hi + margin:
        raise UserError(f"the link '{link}' is outside the trace, which spans {format_time(lo)}..{format_time(hi)}.")


def _event(index: TraceIndex, ref: EventRef, node: str) -> Target:
    t0, t1 = index.interval(ref)
    lane, _ = index.locate(ref)
    w = max(t1 - t0, 1)
    pad = max(w * 0.25, 1000.0)
    return Target(t0 - pad, t1 + pad, lane.track.track_id, ref, node)


def format_time(ns: float) -> str:
    """ns as the shortest exact text the link grammar reads back (1200000 -> '1.2ms')."""
    n = int(round(ns))
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if abs(n) >= scale:
            whole, frac = divmod(abs(n), scale)
            digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
            return f"{'-' if n < 0 else ''}{whole}{'.' + digits if digits else ''}{unit}"
    return f"{n}ns"


def link_for_event(index: TraceIndex, ref: EventRef) -> str:
    """The link of one event: instruction:ID, dma:ID, kernel:ID or collective:ID."""
    ev = index.tables[ref.table]
    if ref.table in ("instructions", "dma"):
        return f"{'instruction' if ref.table == 'instructions' else 'dma'}:{int(ev.value('id', ref.row))}"
    if ref.table == "kernels":
        return f"kernel:{int(ev.column('kernel_id')[ref.row])}"
    return f"collective:{int(ev.column('collective_id')[ref.row])}"


def link_for_range(t0: float, t1: float) -> str:
    return f"t={format_time(t0)}:{format_time(max(t1, t0 + 1))}"


def link_text(node: str, t0: int, t1: int) -> str:
    """A summary link's text: its node when the grammar has that kind, else its range."""
    kind = node.partition(":")[0]
    return node if kind in KINDS and node.partition(":")[2].isdigit() else link_for_range(t0, t1)
