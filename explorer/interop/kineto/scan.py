"""One compiled pass over a Kineto file's bytes: the fields the importer reads, as arrays.

Python's cost on a profiler trace is not the parse but the objects: a few hundred
thousand events, most of them dropped (`python_function`, `cuda_runtime`, flows), each
built as a dict or struct and visited again to sort it into columns. This scanner
(numba; compiled once, cached on disk) walks the JSON bytes once and writes per kept
event only numbers into two arrays: `ph`, the category (matched against CATEGORIES),
the span of `name`, pids and tids (integers, or the span of a string), `ts`/`dur` as
float64, where `args` is and the args every event may need (External id, device,
stream, bytes, whether it names a collective). An event whose ph and category say the
importer drops it is skipped from its category on, bracket by bracket, and only
counted. Floats are exact (json_bytes.number; the rare longer number is handed back as
a span for Python's float()).

It reads only what it fully understands. The first thing it does not (trailing commas,
NaN, a string timestamp, an escaped key or category, a float id, truncation, raw control
characters in a string, trailing garbage) makes it refuse the file, and the importer
takes its tolerant path instead. Every index is checked against the buffer's length.
"""

from __future__ import annotations

import numpy as np

from explorer.interop.kineto import json_bytes as J
from explorer.interop.kineto.json_bytes import HAVE_NUMBA, njit
from simcore.jit import depends_on
from explorer.interop.kineto.events import (ANNOTATION_CAT, CPU_OP_CATS, GPU_COPY_CATS, GPU_KERNEL_CATS, LAUNCH_CATS,
                                           MEMORY_CAT)

# Written out, not derived: numba bakes these tables into its on-disk cache, which it renews
# only when this file changes, so a category added in events.py must change this line too
# (the check below fails loudly until it does).
CATEGORIES = ["Kernel", "cuda_sync", "kernel", "mtia_ccp_events", "Memcpy", "Memset", "gpu_memcpy", "gpu_memset",
              "Operator", "cpu_op", "python_function", "user_annotation", "cpu_instant_event", "cuda_driver",
              "cuda_runtime", "glow_runtime", "mtia_runtime", "privateuse1_driver", "privateuse1_runtime", "xpu_driver",
              "xpu_runtime", "gpu_user_annotation"]
if CATEGORIES != [*sorted(GPU_KERNEL_CATS), *sorted(GPU_COPY_CATS), *sorted(CPU_OP_CATS), MEMORY_CAT,
                  *sorted(LAUNCH_CATS), ANNOTATION_CAT]:
    raise ImportError("kineto.scan.CATEGORIES differs from the categories in kineto.events; update both")

# -- per-event integer columns ---------------------------------------------------------
PH = 0                      # byte of a one-character ph, 0 for another string, -1 absent
CAT = 1                     # 1 + index in CATEGORIES, 0 another string, -1 absent
NAME_S, NAME_E = 2, 3       # span of the name's contents (between the quotes), -1 absent
PID_K, PID_V, PID_E = 4, 5, 6   # kind 0 absent/null, 1 int (V), 2 string (V..E contents)
TID_K, TID_V, TID_E = 7, 8, 9
ARGS_S, ARGS_E = 10, 11     # span of the args object, -1 absent
EXT_K, EXT_V = 12, 13       # args "External id": kind 0 absent/null, 1 int
DEV_K, DEV_V = 14, 15       # args "device"
STR_K, STR_V = 16, 17       # args "stream": kind 0 absent/null, 1 int (V), 2 string (V..STR_E contents)
BYT_K, BYT_V = 18, 19       # args "bytes"
COLL = 20                   # 1 when args has a non-null "Collective name"
SLOW_TS, SLOW_DUR = 21, 22  # where a ts/dur the fast path could not give exactly starts, else -1
COLL_S, COLL_E = 23, 24     # span of the "Collective name" string's contents, -1 if not a string
COR_K, COR_V = 25, 26       # args "correlation": kind 0 absent/null, 1 int
STR_E = 27
N_INT = 28
TS, DUR = 0, 1              # float columns; NaN when absent or null
HEADER_KEYS = ("distributedInfo", "deviceProperties", "traceName", "schemaVersion", "baseTimeNanoseconds")
OK, REFUSED = 0, -1
_DEFAULTS = np.full(N_INT, -1, dtype=np.int64)
_DEFAULTS[[PID_K, TID_K, EXT_K, DEV_K, STR_K, BYT_K, COLL, COR_K]] = 0


def _table(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [w.encode() for w in words]
    table = np.zeros((len(raw), max(map(len, raw))), dtype=np.uint8)
    for i, b in enumerate(raw):
        table[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return table, np.array([len(b) for b in raw], dtype=np.int64)


_CAT_TABLE, _CAT_LENS = _table(CATEGORIES)
K_DUR, K_CAT, K_PID, K_TID, K_NAME, K_ARGS = (J.constant(k) for k in ("dur", "cat", "pid", "tid", "name", "args"))
K_EXT, K_DEVICE, K_STREAM, K_BYTES, K_COLL = (J.constant(k) for k in ("External id", "device", "stream", "bytes", "Collective name"))
K_CORR = J.constant("correlation")
K_EVENTS = J.constant("traceEvents")
K_H0, K_H1, K_H2, K_H3, K_H4 = (J.constant(k) for k in HEADER_KEYS)


@njit(cache=True, nogil=True)
def _category(buf, s, e):
    """1 + the index of buf[s:e] in CATEGORIES, or 0."""
    m = e - s
    for k in range(len(_CAT_LENS)):
        if _CAT_LENS[k] == m:
            same = True
            for q in range(m):
                if buf[s + q] != _CAT_TABLE[k, q]:
                    same = False
                    break
            if same:
                return k + 1
    return 0


@depends_on(J)  # json_bytes compiled in: an edit there recompiles this
@njit(cache=True, nogil=True, inline="always")
def _args(buf, i, n, ints, r):
    """The args object at i (its '{'): its span, and the integer args the importer needs."""
    ints[r, ARGS_S] = i
    j = J.ws(buf, i + 1, n)
    if j < n and buf[j] == 125:
        ints[r, ARGS_E] = j + 1
        return j + 1
    while True:
        if j >= n or buf[j] != 34:
            return -1
        k, esc = J.string_end(buf, j, n)
        if k < 0 or esc:  # unterminated, or an escaped key: the tolerant path decides
            return -1
        ks, ke = j + 1, k - 1
        j = J.ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return -1
        j = J.ws(buf, j + 1, n)
        if j >= n:
            return -1
        first = buf[ks] if ke > ks else 0
        col = -1
        if first == 69 and J.equals(buf, ks, ke, K_EXT):
            col = EXT_K
        elif first == 100 and J.equals(buf, ks, ke, K_DEVICE):
            col = DEV_K
        elif first == 115 and J.equals(buf, ks, ke, K_STREAM):
            col = STR_K
        elif first == 98 and J.equals(buf, ks, ke, K_BYTES):
            col = BYT_K
        elif first == 99 and J.equals(buf, ks, ke, K_CORR):
            col = COR_K
        if col == STR_K and buf[j] == 34:  # a string stream (ROCm launches write a pointer)
            e, _esc = J.string_end(buf, j, n)
            if e < 0:
                return -1
            ints[r, STR_K] = 2
            ints[r, STR_V] = j + 1
            ints[r, STR_E] = e - 1
            j = e
        elif col >= 0:
            j, kind, value = J.integer(buf, j, n)
            ints[r, col] = kind
            ints[r, col + 1] = value
        else:
            c = buf[j]
            if first == 67 and J.equals(buf, ks, ke, K_COLL):
                ints[r, COLL] = 0 if J.is_null(buf, j, n) else 1
                if c == 34:
                    ints[r, COLL_S] = j + 1
                    ints[r, COLL_E] = J.string_end(buf, j, n)[0] - 1
            j = J.skip(buf, j, n)
        if j < 0:
            return -1
        j = J.ws(buf, j, n)
        if j >= n:
            return -1
        if buf[j] == 44:
            j = J.ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            ints[r, ARGS_E] = j + 1
            return j + 1
        return -1


@depends_on(J)
@njit(cache=True, nogil=True, inline="always")
def _event(buf, i, n, ints, floats, r, keep):
    """The event object at i (its '{') into row r: (index after it or -1, dropped). An event
    whose ph (not metadata) comes before a category `keep` leaves out is skipped from there."""
    j = J.ws(buf, i + 1, n)
    if j < n and buf[j] == 125:
        return j + 1, False
    while True:
        if j >= n or buf[j] != 34:
            return -1, False
        k, esc = J.string_end(buf, j, n)
        if k < 0 or esc:
            return -1, False
        ks, ke = j + 1, k - 1
        j = J.ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return -1, False
        j = J.ws(buf, j + 1, n)
        if j >= n:
            return -1, False
        klen = ke - ks
        c0 = buf[ks] if klen > 0 else 0
        c = buf[j]
        if klen == 2 and c0 == 112 and buf[ks + 1] == 104:  # ph
            if c == 34:
                e, _esc = J.string_end(buf, j, n)
                if e < 0:
                    return -1, False
                ints[r, PH] = buf[j + 1] if e - j == 3 else 0
                j = e
            elif J.is_null(buf, j, n):
                j += 4
            else:
                return -1, False
        elif (klen == 2 and c0 == 116 and buf[ks + 1] == 115) or (klen == 3 and c0 == 100 and J.equals(buf, ks, ke, K_DUR)):
            col, slow = (TS, SLOW_TS) if klen == 2 else (DUR, SLOW_DUR)
            if c == 110:
                j = j + 4 if J.is_null(buf, j, n) else -1
            else:
                start = j
                j, value, _int = J.number(buf, j, n)
                floats[r, col] = value
                if j >= 0 and value != value:
                    ints[r, slow] = start  # for Python's float()
        elif klen == 3 and c0 == 99 and J.equals(buf, ks, ke, K_CAT):
            if c == 34:
                e, esc = J.string_end(buf, j, n)
                if e < 0 or esc:  # an escaped category is not matched byte for byte: refuse
                    return -1, False
                code = _category(buf, j + 1, e - 1)
                ints[r, CAT] = code
                j = e
                if (code == 0 or (keep >> (code - 1)) & 1 == 0) and ints[r, PH] >= 0 and ints[r, PH] != 77:
                    return J.close(buf, j, n, np.uint64(1), 1), True
            elif J.is_null(buf, j, n):
                j += 4
            else:
                return -1, False
        elif klen == 4 and c0 == 110 and J.equals(buf, ks, ke, K_NAME):
            if c == 34:
                e, _esc = J.string_end(buf, j, n)
                ints[r, NAME_S] = j + 1
                ints[r, NAME_E] = e - 1
                j = e
            elif J.is_null(buf, j, n):
                j += 4
            else:
                return -1, False
        elif klen == 3 and c0 == 112 and J.equals(buf, ks, ke, K_PID) or klen == 3 and c0 == 116 and J.equals(buf, ks, ke, K_TID):
            col = PID_K if c0 == 112 else TID_K
            if c == 34:
                e, _esc = J.string_end(buf, j, n)
                ints[r, col] = 2
                ints[r, col + 1] = j + 1
                ints[r, col + 2] = e - 1
                j = e
            else:
                j, kind, value = J.integer(buf, j, n)
                ints[r, col] = kind
                ints[r, col + 1] = value
        elif klen == 4 and c0 == 97 and J.equals(buf, ks, ke, K_ARGS):
            if c == 123:
                j = _args(buf, j, n, ints, r)
            elif J.is_null(buf, j, n):
                j += 4
            else:
                return -1, False
        else:
            j = J.skip(buf, j, n)
        if j < 0:
            return -1, False
        j = J.ws(buf, j, n)
        if j >= n:
            return -1, False
        if buf[j] == 44:
            j = J.ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            return j + 1, False
        return -1, False


@depends_on(J)
@njit(cache=True, nogil=True)
def _events(buf, i, n, ints, floats, keep, counts):
    """The events array at i (its '['): (index after ']' or -1, rows kept, arrays). counts[0]
    gets the number of events; the arrays double when full."""
    j = J.ws(buf, i + 1, n)
    r = 0
    if j < n and buf[j] == 93:
        return j + 1, 0, ints, floats
    while True:
        if j >= n or buf[j] != 123:
            return -1, r, ints, floats
        if r >= ints.shape[0]:
            bigger = np.empty((2 * ints.shape[0] + 16, N_INT), dtype=np.int64)
            bigger[:r] = ints[:r]
            ints = bigger
            fbig = np.empty((2 * floats.shape[0] + 16, 2), dtype=np.float64)
            fbig[:r] = floats[:r]
            floats = fbig
        for q in range(N_INT):
            ints[r, q] = _DEFAULTS[q]
        floats[r, TS] = np.nan
        floats[r, DUR] = np.nan
        j, dropped = _event(buf, j, n, ints, floats, r, keep)
        if j < 0:
            return -1, r, ints, floats
        counts[0] += 1
        if not dropped:
            r += 1
        j = J.ws(buf, j, n)
        if j >= n:
            return -1, r, ints, floats
        if buf[j] == 44:
            j = J.ws(buf, j + 1, n)
            continue
        if buf[j] == 93:
            return j + 1, r, ints, floats
        return -1, r, ints, floats


@depends_on(J)
@njit(cache=True, nogil=True)
def _header_slot(buf, s, e):
    if J.equals(buf, s, e, K_H0):
        return 0
    if J.equals(buf, s, e, K_H1):
        return 1
    if J.equals(buf, s, e, K_H2):
        return 2
    if J.equals(buf, s, e, K_H3):
        return 3
    if J.equals(buf, s, e, K_H4):
        return 4
    return -1


@depends_on(J)
@njit(cache=True, nogil=True)
def scan_bytes(buf, ints, floats, header, keep, counts):
    """Scan a whole document: an object holding traceEvents, or a bare event array.

    Returns (status, rows, ints, floats): status OK when the document was read completely,
    REFUSED when the scanner cannot read it exactly. `header` gets the value span of each
    of HEADER_KEYS found at the top level of an object; counts[0] the number of events."""
    n = len(buf)
    header[:] = -1
    counts[0] = 0
    i = J.ws(buf, 0, n)
    if i >= n:
        return REFUSED, 0, ints, floats
    if buf[i] == 91:
        j, rows, ints, floats = _events(buf, i, n, ints, floats, keep, counts)
        if j < 0 or J.ws(buf, j, n) != n:
            return REFUSED, 0, ints, floats
        return OK, rows, ints, floats
    if buf[i] != 123:
        return REFUSED, 0, ints, floats
    rows = -1
    j = J.ws(buf, i + 1, n)
    while True:
        if j >= n or buf[j] != 34:
            return REFUSED, 0, ints, floats
        k, esc = J.string_end(buf, j, n)
        if k < 0 or esc:
            return REFUSED, 0, ints, floats
        ks, ke = j + 1, k - 1
        j = J.ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return REFUSED, 0, ints, floats
        j = J.ws(buf, j + 1, n)
        if j >= n:
            return REFUSED, 0, ints, floats
        if J.equals(buf, ks, ke, K_EVENTS):
            if rows >= 0 or buf[j] != 91:  # a second traceEvents, or not an array
                return REFUSED, 0, ints, floats
            j, rows, ints, floats = _events(buf, j, n, ints, floats, keep, counts)
        else:
            v = j
            j = J.skip(buf, j, n)
            slot = _header_slot(buf, ks, ke)
            if j >= 0 and slot >= 0:
                header[slot, 0] = v
                header[slot, 1] = j
        if j < 0:
            return REFUSED, 0, ints, floats
        j = J.ws(buf, j, n)
        if j >= n:
            return REFUSED, 0, ints, floats
        if buf[j] == 44:
            j = J.ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            break
        return REFUSED, 0, ints, floats
    if rows < 0 or J.ws(buf, j + 1, n) != n:
        return REFUSED, 0, ints, floats
    return OK, rows, ints, floats


def scan(data: bytes, keep: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(ints, floats, header spans, events in the file) of a file the scanner reads
    completely, else None.

    Events of a category not in CATEGORIES, or of one whose `keep` is False, are left out
    when their ph (not "M", metadata) comes before their cat, as Kineto writes them.
    """
    if not HAVE_NUMBA:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    mask = sum(1 << i for i, k in enumerate(keep) if k)
    header = np.full((len(HEADER_KEYS), 2), -1, dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)
    cap = len(buf) // 512 + 64
    ints = np.empty((cap, N_INT), dtype=np.int64)
    floats = np.empty((cap, 2), dtype=np.float64)
    status, rows, ints, floats = scan_bytes(buf, ints, floats, header, mask, counts)
    if status != OK:
        return None
    return ints[:rows], floats[:rows], header, int(counts[0])
