"""One compiled pass over a Kineto file's bytes: the fields the importer reads, as arrays.

Python's cost on a profiler trace is not the parse but the objects: a few hundred
thousand events, most of them dropped (`python_function`, `cuda_runtime`, flows), each
built as a dict or struct and visited again to sort it into columns. This scanner
(numba; compiled once, cached on disk) walks the JSON bytes once and writes per event
only numbers into preallocated arrays: `ph`, the category (matched against the
importer's table), the span of `name`, pids and tids (integers, or the span of a
string), `ts`/`dur` as float64, where `args` is and the four args every event may need
(External id, device, stream, bytes). Everything else is skipped, never decoded.

Floats are exact: a significand of up to 19 digits below 2**53 with a decimal exponent
within +-22 takes one correctly rounded multiply or divide (Clinger's fast path, what
strtod does first); any other number is handed back as a span for Python's float().

It reads only what it fully understands. The first thing it does not (trailing commas,
NaN, a string timestamp, an escaped key or category, a float id, truncation, raw control
characters in a string, trailing garbage) makes it return a status < 0, and the importer
takes its tolerant path instead. Every index is checked against the buffer's length.
"""

from __future__ import annotations

import numpy as np

try:  # numba is a declared dependency; without it the importer uses its msgspec path
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        def wrap(f):
            return f

        return wrap(args[0]) if args and callable(args[0]) else wrap


# -- per-event integer columns ---------------------------------------------------------
PH = 0                      # byte of a one-character ph, 0 for another string, -1 absent
CAT = 1                     # 1 + index in the category table, 0 another string, -1 absent
DROPPED = -2                # (scanner-internal) an event the importer does not keep
NAME_S, NAME_E = 2, 3       # span of the name's contents (between the quotes), -1 absent
PID_K, PID_V, PID_E = 4, 5, 6   # kind 0 absent/null, 1 int (V), 2 string (V..E contents)
TID_K, TID_V, TID_E = 7, 8, 9
ARGS_S, ARGS_E = 10, 11     # span of the args object, -1 absent
EXT_K, EXT_V = 12, 13       # args "External id": kind 0 absent/null, 1 int
DEV_K, DEV_V = 14, 15       # args "device"
STR_K, STR_V = 16, 17       # args "stream"
BYT_K, BYT_V = 18, 19       # args "bytes"
COLL = 20                   # 1 when args has a non-null "Collective name"
SLOW_TS, SLOW_DUR = 21, 22  # where a ts/dur the fast path could not give exactly starts, else -1
N_INT = 23
TS, DUR = 0, 1              # float columns; NaN when absent or null
HEADER_KEYS = ("distributedInfo", "deviceProperties", "traceName", "schemaVersion", "baseTimeNanoseconds")
MAX_DEPTH = 4096
OK, GROW, REFUSED = 0, -2, -1

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)
_POW10 = np.array([10.0 ** k for k in range(23)], dtype=np.float64)  # exact up to 1e22
_TWO53 = np.uint64(1 << 53)


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8).copy()


K_DUR, K_CAT, K_PID, K_TID = (_bytes(k) for k in ("dur", "cat", "pid", "tid"))
K_NAME, K_ARGS = _bytes("name"), _bytes("args")
K_EXT, K_DEVICE, K_STREAM, K_BYTES, K_COLL = (_bytes(k) for k in ("External id", "device", "stream", "bytes", "Collective name"))
K_EVENTS = _bytes("traceEvents")
K_H0, K_H1, K_H2, K_H3, K_H4 = (_bytes(k) for k in HEADER_KEYS)


def category_table(categories: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The categories the scanner tells apart, as a padded byte matrix and lengths."""
    raw = [c.encode() for c in categories]
    table = np.zeros((len(raw), max(map(len, raw), default=1)), dtype=np.uint8)
    for i, b in enumerate(raw):
        table[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return table, np.array([len(b) for b in raw], dtype=np.int64)


@njit(cache=True, nogil=True)
def _ws(buf, i, n):
    while i < n:
        c = buf[i]
        if c != 32 and c != 10 and c != 13 and c != 9:
            return i
        i += 1
    return i


@njit(cache=True, nogil=True)
def _is(buf, s, e, key):
    """Whether buf[s:e] is exactly `key`."""
    m = len(key)
    if e - s != m:
        return False
    for k in range(m):
        if buf[s + k] != key[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _string_end(buf, i, n):
    """At an opening quote: the index after the closing quote (-1 if there is none or a raw
    control character comes first), negated-minus-2 when the string holds an escape."""
    j = i + 1
    esc = False
    while j < n:
        c = buf[j]
        if c == 34:
            return -(j + 1) - 2 if esc else j + 1
        if c == 92:
            esc = True
            j += 2
            continue
        if c < 32:
            return -1
        j += 1
    return -1


@njit(cache=True, nogil=True)
def _number(buf, i, n, out):
    """The JSON number at i: its end (-1 if malformed); out[0] = the float (NaN when the
    fast path cannot give it exactly), out[1] = 1.0 if it is an integer of <= 18 digits.
    The integer itself is returned through the float only when it is below 2**53, so
    callers that need integers use `_integer`."""
    j = i
    neg = False
    if j < n and buf[j] == 45:
        neg = True
        j += 1
    m = np.uint64(0)
    nd = 0
    e10 = 0
    dropped = False
    int_digits = 0
    while j < n and 48 <= buf[j] <= 57:
        d = np.uint64(buf[j] - 48)
        if nd < 19:
            m = m * np.uint64(10) + d
            if m != 0:
                nd += 1
        else:
            e10 += 1
            dropped = True
        int_digits += 1
        j += 1
    if int_digits == 0:
        return -1
    is_int = True
    if j < n and buf[j] == 46:
        is_int = False
        j += 1
        frac = 0
        while j < n and 48 <= buf[j] <= 57:
            if nd < 19:
                m = m * np.uint64(10) + np.uint64(buf[j] - 48)
                e10 -= 1
                if m != 0:
                    nd += 1
            elif buf[j] != 48:
                dropped = True
            frac += 1
            j += 1
        if frac == 0:
            return -1
    if j < n and (buf[j] == 101 or buf[j] == 69):
        is_int = False
        j += 1
        eneg = False
        if j < n and (buf[j] == 43 or buf[j] == 45):
            eneg = buf[j] == 45
            j += 1
        ex = 0
        exd = 0
        while j < n and 48 <= buf[j] <= 57:
            if ex < 100000:
                ex = ex * 10 + (buf[j] - 48)
            exd += 1
            j += 1
        if exd == 0:
            return -1
        e10 += -ex if eneg else ex
    value = np.nan
    if m == 0:
        value = 0.0
    elif not dropped and m < _TWO53 and -22 <= e10 <= 22:
        value = float(m)
        if e10 >= 0:
            value = value * _POW10[e10]
        else:
            value = value / _POW10[-e10]
    out[0] = -value if neg else value
    out[1] = 1.0 if is_int and int_digits <= 18 else 0.0
    return j


@njit(cache=True, nogil=True)
def _number_end(buf, i, n):
    """Index after the JSON number at i (its grammar checked, its value not computed), or -1."""
    j = i
    if j < n and buf[j] == 45:
        j += 1
    d = j
    while j < n and 48 <= buf[j] <= 57:
        j += 1
    if j == d:
        return -1
    if j < n and buf[j] == 46:
        j += 1
        d = j
        while j < n and 48 <= buf[j] <= 57:
            j += 1
        if j == d:
            return -1
    if j < n and (buf[j] == 101 or buf[j] == 69):
        j += 1
        if j < n and (buf[j] == 43 or buf[j] == 45):
            j += 1
        d = j
        while j < n and 48 <= buf[j] <= 57:
            j += 1
        if j == d:
            return -1
    return j


@njit(cache=True, nogil=True)
def _integer(buf, i, n, row, kcol, vcol):
    """An integer (or null) into row[kcol] = 1, row[vcol] = value; -1 for anything else."""
    if i + 4 <= n and buf[i] == 110:
        if buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108:
            row[kcol] = 0
            return i + 4
        return -1
    j = i
    neg = False
    if j < n and buf[j] == 45:
        neg = True
        j += 1
    v = 0
    digits = 0
    while j < n and 48 <= buf[j] <= 57:
        v = v * 10 + (buf[j] - 48)
        digits += 1
        j += 1
    if digits == 0 or digits > 18:
        return -1
    if j < n and (buf[j] == 46 or buf[j] == 101 or buf[j] == 69):
        return -1  # a float where an integer id belongs
    row[kcol] = 1
    row[vcol] = -v if neg else v
    return j


@njit(cache=True, nogil=True)
def _close(buf, j, n, stack, depth):
    """Index after the container whose closers stack[:depth] are still open at j, or -1.
    Bracket kinds are matched and strings skipped; nothing else is checked."""
    while j < n:
        c = buf[j]
        if c == 34:
            j += 1
            while j < n:
                d = buf[j]
                if d == 34:
                    break
                if d == 92:
                    j += 1
                elif d < 32:
                    return -1
                j += 1
            if j >= n:
                return -1
        elif c == 123 or c == 91:
            if depth >= len(stack):
                return -1
            stack[depth] = 125 if c == 123 else 93
            depth += 1
        elif c == 125 or c == 93:
            if depth == 0 or stack[depth - 1] != c:
                return -1
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return -1


@njit(cache=True, nogil=True)
def _container_end(buf, i, n, stack):
    """Index after the object or array at i, or -1."""
    stack[0] = 125 if buf[i] == 123 else 93
    return _close(buf, i + 1, n, stack, 1)


@njit(cache=True, nogil=True)
def _skip(buf, i, n, stack, num):
    """Index after any JSON value at i, or -1."""
    if i >= n:
        return -1
    c = buf[i]
    if c == 34:
        e = _string_end(buf, i, n)
        return e if e >= -1 else -e - 2
    if c == 45 or 48 <= c <= 57:
        return _number_end(buf, i, n)
    if c == 123 or c == 91:
        return _container_end(buf, i, n, stack)
    if c == 116 and i + 4 <= n and buf[i + 1] == 114 and buf[i + 2] == 117 and buf[i + 3] == 101:
        return i + 4
    if c == 102 and i + 5 <= n and buf[i + 1] == 97 and buf[i + 2] == 108 and buf[i + 3] == 115 and buf[i + 4] == 101:
        return i + 5
    if c == 110 and i + 4 <= n and buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108:
        return i + 4
    return -1


@njit(cache=True, nogil=True)
def _is_null(buf, i, n):
    return i + 4 <= n and buf[i] == 110 and buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108


@njit(cache=True, nogil=True)
def _args(buf, i, n, row, stack, num):
    """The args object at i: its span, and External id, device, stream, bytes."""
    row[ARGS_S] = i
    j = _ws(buf, i + 1, n)
    if j < n and buf[j] == 125:
        row[ARGS_E] = j + 1
        return j + 1
    while True:
        if j >= n or buf[j] != 34:
            return -1
        k = _string_end(buf, j, n)
        if k < 0:  # unterminated, or an escaped key: the tolerant path decides
            return -1
        ks, ke = j + 1, k - 1
        j = _ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return -1
        j = _ws(buf, j + 1, n)
        if j >= n:
            return -1
        first = buf[ks] if ke > ks else 0
        if first == 69 and _is(buf, ks, ke, K_EXT):
            j = _integer(buf, j, n, row, EXT_K, EXT_V)
        elif first == 100 and _is(buf, ks, ke, K_DEVICE):
            j = _integer(buf, j, n, row, DEV_K, DEV_V)
        elif first == 115 and _is(buf, ks, ke, K_STREAM):
            j = _integer(buf, j, n, row, STR_K, STR_V)
        elif first == 98 and _is(buf, ks, ke, K_BYTES):
            j = _integer(buf, j, n, row, BYT_K, BYT_V)
        else:
            if first == 67 and _is(buf, ks, ke, K_COLL):
                row[COLL] = 0 if _is_null(buf, j, n) else 1
            j = _skip(buf, j, n, stack, num)
        if j < 0:
            return -1
        j = _ws(buf, j, n)
        if j >= n:
            return -1
        if buf[j] == 44:
            j = _ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            row[ARGS_E] = j + 1
            return j + 1
        return -1


@njit(cache=True, nogil=True)
def _category(buf, s, e, table, lens):
    m = e - s
    for k in range(len(lens)):
        if lens[k] == m:
            same = True
            for q in range(m):
                if buf[s + q] != table[k, q]:
                    same = False
                    break
            if same:
                return k + 1
    return 0


@njit(cache=True, nogil=True)
def _id(buf, j, n, row, kcol, vcol, ecol):
    """A pid or tid: an integer, a string (its contents' span) or null."""
    if j < n and buf[j] == 34:
        e = _string_end(buf, j, n)
        if e == -1:
            return -1
        e = e if e >= 0 else -e - 2
        row[kcol] = 2
        row[vcol] = j + 1
        row[ecol] = e - 1
        return e
    return _integer(buf, j, n, row, kcol, vcol)


@njit(cache=True, nogil=True)
def _event(buf, i, n, row, f, stack, num, table, lens, keep):
    """The event object at i into `row` and `f`; the index after it, or -1. An event
    whose ph (not metadata) and category say the importer drops it is skipped from there
    on and marked row[CAT] = -2."""
    j = _ws(buf, i + 1, n)
    if j < n and buf[j] == 125:
        return j + 1
    while True:
        if j >= n or buf[j] != 34:
            return -1
        k = _string_end(buf, j, n)
        if k < 0:
            return -1
        ks, ke = j + 1, k - 1
        j = _ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return -1
        j = _ws(buf, j + 1, n)
        if j >= n:
            return -1
        klen = ke - ks
        c0 = buf[ks] if klen > 0 else 0
        c = buf[j]
        if klen == 2 and (c0 == 116 or c0 == 112) and (buf[ks + 1] == 115 or buf[ks + 1] == 104):
            if c0 == 116 and buf[ks + 1] == 115:  # ts
                if c == 110:
                    j = j + 4 if _is_null(buf, j, n) else -1
                else:
                    start = j
                    j = _number(buf, j, n, num)
                    f[TS] = num[0]
                    if j >= 0 and num[0] != num[0]:
                        row[SLOW_TS] = start  # for Python's float()
            elif c0 == 112 and buf[ks + 1] == 104:  # ph
                if c == 34:
                    e = _string_end(buf, j, n)
                    if e < 0:
                        return -1
                    row[PH] = buf[j + 1] if e - j == 3 else 0
                    j = e
                elif _is_null(buf, j, n):
                    j += 4
                else:
                    return -1
            else:
                j = _skip(buf, j, n, stack, num)
        elif klen == 3 and c0 == 100 and _is(buf, ks, ke, K_DUR):
            if c == 110:
                j = j + 4 if _is_null(buf, j, n) else -1
            else:
                start = j
                j = _number(buf, j, n, num)
                f[DUR] = num[0]
                if j >= 0 and num[0] != num[0]:
                    row[SLOW_DUR] = start
        elif klen == 3 and c0 == 99 and _is(buf, ks, ke, K_CAT):
            if c == 34:
                e = _string_end(buf, j, n)
                if e < 0:  # an escaped category is not matched byte for byte: refuse
                    return -1
                code = _category(buf, j + 1, e - 1, table, lens)
                row[CAT] = code
                j = e
                if (code == 0 or keep[code - 1] == 0) and row[PH] >= 0 and row[PH] != 77:
                    stack[0] = 125
                    j = _close(buf, j, n, stack, 1)
                    row[CAT] = DROPPED
                    return j
            elif _is_null(buf, j, n):
                j += 4
            else:
                return -1
        elif klen == 4 and c0 == 110 and _is(buf, ks, ke, K_NAME):
            if c == 34:
                e = _string_end(buf, j, n)
                if e == -1:
                    return -1
                e = e if e >= 0 else -e - 2
                row[NAME_S] = j + 1
                row[NAME_E] = e - 1
                j = e
            elif _is_null(buf, j, n):
                j += 4
            else:
                return -1
        elif klen == 3 and c0 == 112 and _is(buf, ks, ke, K_PID):
            j = _id(buf, j, n, row, PID_K, PID_V, PID_E)
        elif klen == 3 and c0 == 116 and _is(buf, ks, ke, K_TID):
            j = _id(buf, j, n, row, TID_K, TID_V, TID_E)
        elif klen == 4 and c0 == 97 and _is(buf, ks, ke, K_ARGS):
            if c == 123:
                j = _args(buf, j, n, row, stack, num)
            elif _is_null(buf, j, n):
                j += 4
            else:
                return -1
        elif c == 34:
            e = _string_end(buf, j, n)
            j = e if e >= -1 else -e - 2
        elif c == 45 or 48 <= c <= 57:
            j = _number_end(buf, j, n)
        else:
            j = _skip(buf, j, n, stack, num)
        if j < 0:
            return -1
        j = _ws(buf, j, n)
        if j >= n:
            return -1
        if buf[j] == 44:
            j = _ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            return j + 1
        return -1


@njit(cache=True, nogil=True)
def _events(buf, i, n, ints, floats, stack, table, lens, keep, counts):
    """The events array at i (on its '['): (index after ']' or < 0, rows, arrays).
    Rows hold the events not dropped; counts[0] gets the number of events. The arrays
    double when full."""
    num = np.empty(2, dtype=np.float64)
    j = _ws(buf, i + 1, n)
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
        row = ints[r]
        row[:] = -1
        row[PID_K] = 0
        row[TID_K] = 0
        row[EXT_K] = 0
        row[DEV_K] = 0
        row[STR_K] = 0
        row[BYT_K] = 0
        row[COLL] = 0
        f = floats[r]
        f[0] = np.nan
        f[1] = np.nan
        j = _event(buf, j, n, row, f, stack, num, table, lens, keep)
        if j < 0:
            return -1, r, ints, floats
        counts[0] += 1
        if row[CAT] != DROPPED:
            r += 1
        j = _ws(buf, j, n)
        if j >= n:
            return -1, r, ints, floats
        if buf[j] == 44:
            j = _ws(buf, j + 1, n)
            continue
        if buf[j] == 93:
            return j + 1, r, ints, floats
        return -1, r, ints, floats


@njit(cache=True, nogil=True)
def scan_bytes(buf, ints, floats, header, table, lens, keep, counts):
    """Scan a whole document: an object holding traceEvents, or a bare event array.

    Returns (status, rows, ints, floats): status 0 when the document was read completely,
    -1 when the scanner cannot read it (the tolerant path must). `header` gets the value
    span of each of HEADER_KEYS found at the top level of an object; counts[0] the
    number of events, kept or not."""
    n = len(buf)
    stack = np.empty(MAX_DEPTH, dtype=np.uint8)
    num = np.empty(2, dtype=np.float64)
    header[:] = -1
    counts[0] = 0
    i = _ws(buf, 0, n)
    if i >= n:
        return REFUSED, 0, ints, floats
    if buf[i] == 91:
        j, rows, ints, floats = _events(buf, i, n, ints, floats, stack, table, lens, keep, counts)
        if j < 0 or _ws(buf, j, n) != n:
            return REFUSED, 0, ints, floats
        return OK, rows, ints, floats
    if buf[i] != 123:
        return REFUSED, 0, ints, floats
    rows = -1
    j = _ws(buf, i + 1, n)
    while True:
        if j >= n or buf[j] != 34:
            return REFUSED, 0, ints, floats
        k = _string_end(buf, j, n)
        if k < 0:
            return REFUSED, 0, ints, floats
        ks, ke = j + 1, k - 1
        j = _ws(buf, k, n)
        if j >= n or buf[j] != 58:
            return REFUSED, 0, ints, floats
        j = _ws(buf, j + 1, n)
        if j >= n:
            return REFUSED, 0, ints, floats
        if _is(buf, ks, ke, K_EVENTS):
            if rows >= 0 or buf[j] != 91:  # a second traceEvents, or not an array
                return REFUSED, 0, ints, floats
            j, rows, ints, floats = _events(buf, j, n, ints, floats, stack, table, lens, keep, counts)
        else:
            v = j
            j = _skip(buf, j, n, stack, num)
            if j >= 0:
                h = -1
                if _is(buf, ks, ke, K_H0):
                    h = 0
                elif _is(buf, ks, ke, K_H1):
                    h = 1
                elif _is(buf, ks, ke, K_H2):
                    h = 2
                elif _is(buf, ks, ke, K_H3):
                    h = 3
                elif _is(buf, ks, ke, K_H4):
                    h = 4
                if h >= 0:
                    header[h, 0] = v
                    header[h, 1] = j
        if j < 0:
            return REFUSED, 0, ints, floats
        j = _ws(buf, j, n)
        if j >= n:
            return REFUSED, 0, ints, floats
        if buf[j] == 44:
            j = _ws(buf, j + 1, n)
            continue
        if buf[j] == 125:
            break
        return REFUSED, 0, ints, floats
    if rows < 0 or _ws(buf, j + 1, n) != n:
        return REFUSED, 0, ints, floats
    return OK, rows, ints, floats


@njit(cache=True, nogil=True)
def hash_spans(buf, starts, ends):
    """FNV-1a of each span's bytes (-1 spans hash as 0)."""
    out = np.zeros(len(starts), dtype=np.uint64)
    for r in range(len(starts)):
        s, e = starts[r], ends[r]
        if s < 0 or e > len(buf) or e < s:
            continue
        h = _FNV_OFFSET
        for k in range(s, e):
            h = (h ^ np.uint64(buf[k])) * _FNV_PRIME
        out[r] = h
    return out


@njit(cache=True, nogil=True)
def same_spans(buf, starts, ends, rep_starts, rep_ends):
    """Whether every span holds the same bytes as its representative (rules out hash collisions)."""
    for r in range(len(starts)):
        s, e, rs, re_ = starts[r], ends[r], rep_starts[r], rep_ends[r]
        if e - s != re_ - rs:
            return False
        if s == rs:
            continue
        for k in range(e - s):
            if buf[s + k] != buf[rs + k]:
                return False
    return True


def scan(data: bytes, categories: list[str], keep: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(ints, floats, header spans, events in the file) of a file the scanner reads
    completely, else None.

    `categories` are the `cat` values to tell apart (ints[:, CAT] is 1 + the index);
    events of other categories, or of one whose `keep` is False, are left out (metadata
    events, ph "M", always stay), when their ph comes before their cat as Kineto writes it.
    """
    if not HAVE_NUMBA:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    table, lens = category_table(categories)
    keep_arr = np.array(keep, dtype=np.uint8)
    header = np.full((len(HEADER_KEYS), 2), -1, dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)
    cap = len(buf) // 512 + 64
    ints = np.empty((cap, N_INT), dtype=np.int64)
    floats = np.empty((cap, 2), dtype=np.float64)
    status, rows, ints, floats = scan_bytes(buf, ints, floats, header, table, lens, keep_arr, counts)
    if status != OK:
        return None
    return ints[:rows], floats[:rows], header, int(counts[0])
