"""The byte scanner's arrays -> one rank's `RankEvents`, without a Python object per event.

After `kineto.scan` has found every event's fields, what is left is whole-column work:
pick the rows by ph and category, turn times into float64 columns, and decode each
*distinct* string once (names and string ids are hashed in compiled code, grouped with
numpy, checked byte for byte against their group's first member so a hash collision
can never merge two names, then decoded). Only the few events whose args matter -
metadata, allocator samples, NCCL kernels, collective CPU ops - have their args
decoded, from their byte span, with msgspec.

Anything this cannot finish exactly (invalid UTF-8 in a name, a broken escape, args
msgspec refuses) returns None and the importer re-reads the file on its tolerant path.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from explorer.interop.kineto import json_bytes as J
from explorer.interop.kineto import scan as S
from explorer.interop.kineto.events import (
    COPY,
    CPU_OP,
    KERNEL,
    MAX_DUR_US,
    MAX_TS_US,
    MEMORY,
    MEMORY_NAME,
    RankEvents,
    _Names,
    _memory_sample,
    _metadata,
    class_of,
    is_comm_kernel,
    split,
)
from explorer.interop.kineto.hta import hta_stream
from explorer.interop.kineto.schema import Args

CATEGORIES = S.CATEGORIES
_ARGS = msgspec.json.Decoder(Args)
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_MEMORY = MEMORY_NAME.encode()
_PH_X, _PH_M, _PH_i, _PH_I = ord("X"), ord("M"), ord("i"), ord("I")


class _Refused(Exception):
    """Something only the tolerant path reads exactly."""


def read_scanned(data: bytes, include_python: bool) -> tuple[RankEvents, dict[str, Any]] | None:
    """(events, header) of a file the scanner reads completely, or None to fall back."""
    keep = [class_of(c, include_python) >= 0 for c in CATEGORIES]
    found = S.scan(data, keep)
    if found is None:
        return None
    ints, floats, spans, total = found
    try:
        header = {key: msgspec.json.decode(data[s:e]) for key, (s, e) in zip(S.HEADER_KEYS, spans.tolist()) if s >= 0}
        header = {k: v for k, v in header.items() if v is not None}
        return _rank_events(data, ints, floats, total, include_python), header
    except (_Refused, msgspec.DecodeError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def _text(raw: bytes) -> str:
    """A JSON string's contents (between the quotes) as text."""
    if b"\\" in raw:
        return msgspec.json.decode(b'"' + raw + b'"')
    return raw.decode("utf-8")


def _distinct(buf: np.ndarray, data: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each span's index into the list of distinct strings the spans hold (each decoded once)."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64), []
    h = J.hash_spans(buf, starts, ends)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    rep = first[inv]
    if not J.same_spans(buf, starts, ends, starts[rep], ends[rep]):
        raise _Refused("two different strings share a hash")
    return inv.astype(np.int64), [_text(data[s:e]) for s, e in zip(starts[first].tolist(), ends[first].tolist())]


def _value(ints: np.ndarray, data: bytes, r: int, kind: int, val: int, end: int) -> Any:
    """One pid or tid as the JSON gave it: an int, a string, or None."""
    k = ints[r, kind]
    if k == 1:
        return int(ints[r, val])
    if k == 2:
        return _text(data[int(ints[r, val]):int(ints[r, end])])
    return None


def _args(data: bytes, ints: np.ndarray, r: int) -> Any:
    s, e = int(ints[r, S.ARGS_S]), int(ints[r, S.ARGS_E])
    return None if s < 0 else _ARGS.decode(data[s:e])


def _id_component(buf: np.ndarray, data: bytes, kind: np.ndarray, val: np.ndarray, end: np.ndarray,
                  strings: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """A pid/tid/device/stream column as (is string, int value or string code); an absent
    one is the string "None", as the other readers key it (str(None))."""
    is_str = kind != 1
    out = np.where(is_str, 0, val)
    text = np.flatnonzero(kind == 2)
    if len(text):
        inv, values = _distinct(buf, data, val[text], end[text])
        code = np.array([strings.setdefault(v, len(strings)) for v in values], dtype=np.int64)
        out[text] = code[inv]
    absent = kind == 0
    if absent.any():
        out[absent] = strings.setdefault("None", len(strings))
    return is_str, out


def _factor(is_str: np.ndarray, val: np.ndarray, text: list[str]) -> tuple[np.ndarray, list[Any]]:
    """Dense codes of one id column (ints and strings apart) and the value of each code."""
    code = np.empty(len(val), dtype=np.int64)
    ints, int_code = np.unique(val[~is_str], return_inverse=True)
    strs, str_code = np.unique(val[is_str], return_inverse=True)
    code[~is_str] = int_code
    code[is_str] = len(ints) + str_code
    return code, [int(v) for v in ints.tolist()] + [text[v] for v in strs.tolist()]


def _hta_streams(buf: np.ndarray, data: bytes, rows: np.ndarray) -> np.ndarray:
    """Each row's `args.stream` as HTA reads it (kineto.hta.hta_stream): the integer, a string
    converted by int() (each distinct string once), -1 when absent."""
    kind = rows[:, S.STR_K]
    out = np.where(kind == 1, rows[:, S.STR_V], -1)
    text = np.flatnonzero(kind == 2)
    if len(text):
        inv, values = _distinct(buf, data, rows[text, S.STR_V], rows[text, S.STR_E])
        out[text] = np.array([hta_stream(v) for v in values], dtype=np.int64)[inv]
    return out


def _rank_events(data: bytes, ints: np.ndarray, floats: np.ndarray, total: int, include_python: bool) -> RankEvents:
    out = RankEvents(total=total)
    buf = np.frombuffer(data, dtype=np.uint8)
    for col, slow in ((S.TS, S.SLOW_TS), (S.DUR, S.SLOW_DUR)):  # numbers the compiled path left to float()
        for r in np.flatnonzero(ints[:, slow] >= 0).tolist():
            m = _NUMBER.match(data, int(ints[r, slow]))
            floats[r, col] = float(m.group()) if m else np.nan
    ph, cat = ints[:, S.PH], ints[:, S.CAT]
    cls_table = np.array([class_of(c, include_python) for c in CATEGORIES] + [-1], dtype=np.int64)
    cls = cls_table[np.where(cat > 0, cat - 1, len(CATEGORIES))]
    for r in np.flatnonzero(ph == _PH_M).tolist():
        a = msgspec.json.decode(data[int(ints[r, S.ARGS_S]):int(ints[r, S.ARGS_E])]) if ints[r, S.ARGS_S] >= 0 else None
        if isinstance(a, dict) and a.get("name") is not None:
            name = _text(data[int(ints[r, S.NAME_S]):int(ints[r, S.NAME_E])]) if ints[r, S.NAME_S] >= 0 else None
            _metadata(out, {"name": name, "pid": _value(ints, data, r, S.PID_K, S.PID_V, S.PID_E),
                            "tid": _value(ints, data, r, S.TID_K, S.TID_V, S.TID_E), "args": {"name": a["name"]}})
    memory = (cls == MEMORY) & ((ph == _PH_i) | (ph == _PH_I)) & (ints[:, S.NAME_E] - ints[:, S.NAME_S] == len(_MEMORY))
    memory &= ints[:, S.ARGS_S] >= 0
    for r in np.flatnonzero(memory).tolist():
        if data[int(ints[r, S.NAME_S]):int(ints[r, S.NAME_E])] == _MEMORY:
            a = _args(data, ints, r)
            _memory_sample(out, float(floats[r, S.TS]), a.device_type, a.device_id, a.total_allocated)

    idx = np.flatnonzero((ph == _PH_X) & (cls >= 0) & (cls != MEMORY))
    ts = floats[idx, S.TS]
    dur = np.nan_to_num(floats[idx, S.DUR], nan=0.0, posinf=np.inf, neginf=-np.inf)  # absent or null: 0
    ok = (dur >= 0) & (dur < MAX_DUR_US) & (ts > -MAX_TS_US) & (ts < MAX_TS_US)
    out.skipped = int(len(idx) - np.count_nonzero(ok))
    idx, ts, dur = idx[ok], ts[ok], dur[ok]
    rows = ints[idx]
    kcls = cls[idx]
    n = len(idx)

    # names: each distinct one decoded and cleaned once; an absent name is "(unnamed)"
    has_name = rows[:, S.NAME_S] >= 0
    inv, raw_names = _distinct(buf, data, rows[has_name, S.NAME_S], rows[has_name, S.NAME_E])
    cleaner = _Names()
    vocab: dict[str, int] = {}
    code_of = np.array([vocab.setdefault(cleaner.get(t), len(vocab)) for t in raw_names] or [0], dtype=np.int64)
    name = np.empty(n, dtype=np.int64)
    name[has_name] = code_of[inv] if len(inv) else 0
    if not has_name.all():
        name[~has_name] = vocab.setdefault(cleaner.get(None), len(vocab))
    out.names = list(vocab)

    # places: (device, stream) for GPU rows (pid/tid when args lack them), (pid, tid) for the others
    gpu = (kcls == KERNEL) | (kcls == COPY)
    dev = gpu & (rows[:, S.DEV_K] == 1)
    stream = gpu & ((rows[:, S.STR_K] == 1) | (rows[:, S.STR_K] == 2))
    ka = np.where(dev, 1, rows[:, S.PID_K])
    va = np.where(dev, rows[:, S.DEV_V], rows[:, S.PID_V])
    kb = np.where(stream, rows[:, S.STR_K], rows[:, S.TID_K])
    vb = np.where(stream, rows[:, S.STR_V], rows[:, S.TID_V])
    eb = np.where(stream, rows[:, S.STR_E], rows[:, S.TID_E])
    strings: dict[str, int] = {}
    a_str, a_val = _id_component(buf, data, ka, va, rows[:, S.PID_E], strings)
    b_str, b_val = _id_component(buf, data, kb, vb, eb, strings)
    text = list(strings)
    a_code, a_values = _factor(a_str, a_val, text)
    b_code, b_values = _factor(b_str, b_val, text)
    pairs, place = np.unique(a_code * len(b_values) + b_code, return_inverse=True)
    out.places = [(a_values[p // len(b_values)], b_values[p % len(b_values)]) for p in pairs.tolist()]
    place = place.astype(np.int64)

    has_ext = rows[:, S.EXT_K] == 1
    ext = np.full(n, -1, dtype=np.int64)
    if has_ext.any():
        ext_values, ext_codes = np.unique(rows[has_ext, S.EXT_V], return_inverse=True)
        ext[has_ext] = ext_codes
        out.n_ext = len(ext_values)
    nbytes = np.where((kcls == COPY) & (rows[:, S.BYT_K] == 1), rows[:, S.BYT_V], 0)
    corr = np.where(rows[:, S.COR_K] == 1, rows[:, S.COR_V], -1)
    hstream = _hta_streams(buf, data, rows)
    out.cats = list(CATEGORIES)

    # args where they matter: NCCL kernels (all of them), collective CPU ops (the collective's
    # name, for the op's kind; all of their args only where a kernel lacking its own needs them)
    kept: dict[int, Any] = {}
    comm_names = np.array([is_comm_kernel(t) for t in out.names] or [False], dtype=bool)
    has_args = rows[:, S.ARGS_S] >= 0
    comm = np.flatnonzero((kcls == KERNEL) & comm_names[name] & has_args)
    for j in comm.tolist():
        kept[j] = _args(data, rows, j)
    lacking = comm_names[name] & (kcls == KERNEL) & (rows[:, S.COLL] == 0)
    wanted = np.zeros(out.n_ext + 1, dtype=bool)
    wanted[ext[lacking & (ext >= 0)]] = True
    rpc = vocab.get("record_param_comms", -1)
    ops = np.flatnonzero((kcls == CPU_OP) & has_args & ((rows[:, S.COLL] == 1) | (name == rpc)))
    for j in ops.tolist():
        if wanted[ext[j]] and ext[j] >= 0:  # (ext -1 reads the spare last slot, always False)
            a = kept[j] = _args(data, rows, j)
            out.comm_args[int(ext[j])] = a
        elif rows[j, S.COLL_S] >= 0:
            kept[j] = {"Collective name": _text(data[int(rows[j, S.COLL_S]):int(rows[j, S.COLL_E])])}
        elif rows[j, S.COLL] == 1:  # a collective name that is not a string
            kept[j] = _args(data, rows, j)
        else:
            kept[j] = {}
    split(out, kcls, {"ts": ts, "dur": dur, "name": name, "place": place.reshape(-1).astype(np.int64), "ext": ext,
                      "cat": cat[idx] - 1, "nbytes": nbytes, "corr": corr, "stream": hstream}, kept)
    return out
