"""The fast parser's view of a Kineto file: typed msgspec structs with only what the importer reads.

Decoding straight into these skips every other key (kernel launch geometry,
occupancy, python ids, ...) without building Python objects for it, which is most
of the cost of `json.load` on a profiler trace. Any field may hold any JSON value
(the importer checks types itself); a file these cannot describe - `args` that is
not an object, invalid UTF-8, NaN, truncation - falls back to the tolerant parser.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Args(msgspec.Struct, omit_defaults=True, gc=False):
    """The `args` keys the importer uses, under their Kineto names."""

    name: Any = None  # metadata events (process_name, thread_name)
    external_id: Any = msgspec.field(default=None, name="External id")
    device: Any = None
    stream: Any = None
    correlation: Any = None  # links a device event to its runtime launch (HTA's selection, kineto.hta)
    bytes: Any = None
    collective_name: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    group_size: Any = msgspec.field(default=None, name="Group size")
    dtype: Any = None
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    pg_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    device_type: Any = msgspec.field(default=None, name="Device Type")  # [memory] events: 1 = CUDA
    device_id: Any = msgspec.field(default=None, name="Device Id")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")

    def get(self, key: str, default: Any = None) -> Any:
        """Read like the args dict: `args.get("Collective name")` (None values count as absent)."""
        attr = _ATTRS.get(key)
        value = None if attr is None else getattr(self, attr)
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Args | None = None


class Document(msgspec.Struct):
    traceEvents: list[Event]
    distributedInfo: Any = None
    deviceProperties: Any = None
    traceName: Any = None
    schemaVersion: Any = None
    baseTimeNanoseconds: Any = None


_DOC = msgspec.json.Decoder(Document)
_ARRAY = msgspec.json.Decoder(list[Event])
_KINETO_NAMES = {f.name: f.encode_name for f in msgspec.structs.fields(Args)}
_ATTRS = {kineto: attr for attr, kineto in _KINETO_NAMES.items()}
HEADER_KEYS = ("distributedInfo", "deviceProperties", "traceName", "schemaVersion", "baseTimeNanoseconds")


def decode(data: bytes) -> tuple[list[Event], dict[str, Any]] | None:
    """(events, header) when the bytes are a well-formed Kineto file; None to fall back."""
    first = data.lstrip()[:1]
    try:
        if first == b"[":
            return _ARRAY.decode(data), {}
        if first == b"{":
            doc = _DOC.decode(data)
            header = {k: getattr(doc, k) for k in HEADER_KEYS if getattr(doc, k) is not None}
            return doc.traceEvents, header
    except (msgspec.DecodeError, RecursionError):
        return None
    return None


def args_dict(args: Args | dict[str, Any]) -> dict[str, Any]:
    """An `Args` back as a dict under Kineto's key names (a dict stays as it is)."""
    if isinstance(args, dict):
        return args
    return {_KINETO_NAMES[k]: v for k, v in msgspec.structs.asdict(args).items() if v is not None}


def as_dicts(events: list[Event]) -> list[dict[str, Any]]:
    """Typed events back as plain dicts, for the tolerant per-event path."""
    out = []
    for ev in events:
        d = {k: v for k, v in msgspec.structs.asdict(ev).items() if v is not None}
        if ev.args is not None:
            d["args"] = args_dict(ev.args)
        out.append(d)
    return out
