"""A trace's annotations (`annotations.json`, explorer.model.annotations) as export events.

Chrome JSON gets one "Annotations" process: markers as global instant events (`ph: i`,
`s: g`, drawn across every track in Perfetto and chrome://tracing) and ranges as
complete events (`ph: X`) on its one thread. Perfetto gets an "Annotations" track with
the same instants and slices. Only annotations overlapping the exported window go out.
"""

from __future__ import annotations

from typing import IO

import orjson

from explorer.model.annotations import Annotation, load
from explorer.model.scope import Scope
from simcore.trace import Trace

CHROME_PID = 999_999  # a process of its own, after the chips
PERFETTO_UUID = 0x7A6E6E6F  # the Annotations track


def selected(trace: Trace, sel: Scope) -> list[Annotation]:
    t0 = sel.t0 if sel.t0 is not None else -(2**62)
    t1 = sel.t1 if sel.t1 is not None else 2**62
    return [a for a in load(trace.path) if a.t1 >= t0 and a.t0 <= t1]


def _name(a: Annotation) -> str:
    return a.note or f"{a.kind} {a.id}"


def chrome_lines(trace: Trace, sel: Scope) -> list[str]:
    notes = selected(trace, sel)
    if not notes:
        return []
    out = [f'{{"ph":"M","name":"process_name","pid":{CHROME_PID},"tid":0,"args":{{"name":"Annotations"}}}}',
           f'{{"ph":"M","name":"process_sort_index","pid":{CHROME_PID},"tid":0,"args":{{"sort_index":-1}}}}']
    for a in notes:
        name = orjson.dumps(_name(a)).decode()
        ts = f"{a.t0 // 1000}.{a.t0 % 1000:03d}"
        args = orjson.dumps({"annotation": a.id, "note": a.note}).decode()
        if a.kind == "marker":
            out.append(f'{{"ph":"i","s":"g","cat":"annotation","name":{name},"pid":{CHROME_PID},"tid":0,"ts":{ts},"args":{args}}}')
        else:
            d = a.duration_ns
            out.append(f'{{"ph":"X","cat":"annotation","name":{name},"pid":{CHROME_PID},"tid":0,"ts":{ts},'
                       f'"dur":{d // 1000}.{d % 1000:03d},"args":{args}}}')
    return out


def write_perfetto(fh: IO[bytes], trace: Trace, sel: Scope, pb, seq_id: int, write_packet) -> int:
    """The Annotations track and its events; returns the packets written."""
    notes = selected(trace, sel)
    if not notes:
        return 0
    p = pb.TracePacket()
    p.track_descriptor.uuid = PERFETTO_UUID
    p.track_descriptor.name = "Annotations"
    write_packet(fh, p)
    n = 1
    for a in notes:
        kinds = [(pb.TrackEvent.TYPE_INSTANT, a.t0)] if a.kind == "marker" else \
            [(pb.TrackEvent.TYPE_SLICE_BEGIN, a.t0), (pb.TrackEvent.TYPE_SLICE_END, a.t1)]
        for kind, ts in kinds:
            p = pb.TracePacket()
            p.timestamp = max(ts, 0)
            p.trusted_packet_sequence_id = seq_id
            e = p.track_event
            e.type = kind
            e.track_uuid = PERFETTO_UUID
            if kind != pb.TrackEvent.TYPE_SLICE_END:
                e.name = _name(a)
            write_packet(fh, p)
            n += 1
    return n
