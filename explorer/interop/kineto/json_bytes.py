"""Compiled JSON token readers over a uint8 array, for scanners that build no Python objects.

Each reader takes the buffer, a position and the buffer's length, and returns where the
token ends (-1 when the bytes there are not that token) plus, where it has one, the
token's value - never an array: numba reference-counts array arguments with atomic
operations, which cost more than the parsing when a helper runs once per token.
Nothing reads past `n`. Containers that are skipped are checked for matching brackets
(up to 64 levels) and well-formed strings, not otherwise.
"""

from __future__ import annotations

import numpy as np

from simcore.jit import HAVE_NUMBA, njit

if HAVE_NUMBA:  # without numba the callers fall back to their Python paths
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic
else:  # pragma: no cover - exercised only where numba is missing
    def intrinsic(f):  # type: ignore[no-redef]
        return f

MAX_SKIP_DEPTH = 64
_POW10 = np.array([10.0 ** k for k in range(23)], dtype=np.float64)  # exact up to 1e22
_TWO53 = np.uint64(1 << 53)
_ONE = np.uint64(1)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: a multiplicative hash's constant


def constant(text: str) -> np.ndarray:
    """A key to compare against, as bytes the compiled code can hold as a constant."""
    return np.frombuffer(text.encode(), dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def ws(buf, i, n):
    """The first position at or after i that is not JSON whitespace (n at the end)."""
    while i < n:
        c = buf[i]
        if c != 32 and c != 10 and c != 13 and c != 9:
            return i
        i += 1
    return i


@njit(cache=True, nogil=True)
def equals(buf, s, e, key):
    """Whether buf[s:e] is exactly `key`."""
    m = len(key)
    if e - s != m:
        return False
    for k in range(m):
        if buf[s + k] != key[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def is_null(buf, i, n):
    return i + 4 <= n and buf[i] == 110 and buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108


@njit(cache=True, nogil=True)
def string_end(buf, i, n):
    """At an opening quote: (the index after the closing quote, whether the string holds a
    backslash escape); -1 if it is not closed or a raw control character comes first."""
    j = i + 1
    esc = False
    while j < n:
        c = buf[j]
        if c == 34:
            return j + 1, esc
        if c == 92:
            esc = True
            j += 2
            continue
        if c < 32:
            return -1, esc
        j += 1
    return -1, esc


@njit(cache=True, nogil=True)
def number(buf, i, n):
    """The JSON number at i: (its end or -1, its float value, whether it is an integer of
    at most 18 digits). The float is exact when the significand has at most 19 digits,
    fits 2**53 and the decimal exponent is within +-22 (one correctly rounded multiply or
    divide, as strtod does first); otherwise it is NaN and the caller has Python read it."""
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
        if nd < 19:
            m = m * np.uint64(10) + np.uint64(buf[j] - 48)
            if m != 0:
                nd += 1
        else:
            e10 += 1
            dropped = True
        int_digits += 1
        j += 1
    if int_digits == 0:
        return -1, 0.0, False
    is_int = int_digits <= 18
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
            return -1, 0.0, False
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
            return -1, 0.0, False
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
    return j, (-value if neg else value), is_int


@njit(cache=True, nogil=True)
def number_end(buf, i, n):
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
def integer(buf, i, n):
    """An integer of at most 18 digits, or null: (end, kind 1 or 0 for null, value); end -1
    for anything else (a float, a string, a longer number)."""
    if i < n and buf[i] == 110:
        return (i + 4, 0, 0) if is_null(buf, i, n) else (-1, 0, 0)
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
    if digits == 0 or digits > 18 or (j < n and (buf[j] == 46 or buf[j] == 101 or buf[j] == 69)):
        return -1, 0, 0
    return j, 1, (-v if neg else v)


@njit(cache=True, nogil=True)
def close(buf, j, n, objects, depth):
    """Index after the container(s) open at j, or -1: `depth` levels are open and bit k of
    `objects` says whether level k is an object ('}') or an array (']'). Strings are
    skipped, bracket kinds matched; nothing else is checked."""
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
            if depth >= MAX_SKIP_DEPTH:
                return -1
            bit = _ONE << np.uint64(depth)
            objects = (objects | bit) if c == 123 else (objects & ~bit)
            depth += 1
        elif c == 125 or c == 93:
            if depth == 0:
                return -1
            depth -= 1
            is_object = (objects >> np.uint64(depth)) & _ONE
            if (c == 125) != (is_object == _ONE):
                return -1
            if depth == 0:
                return j + 1
        j += 1
    return -1


@njit(cache=True, nogil=True)
def skip(buf, i, n):
    """Index after any JSON value at i, or -1."""
    if i >= n:
        return -1
    c = buf[i]
    if c == 34:
        return string_end(buf, i, n)[0]
    if c == 45 or 48 <= c <= 57:
        return number_end(buf, i, n)
    if c == 123:
        return close(buf, i + 1, n, _ONE, 1)
    if c == 91:
        return close(buf, i + 1, n, np.uint64(0), 1)
    if c == 116 and i + 4 <= n and buf[i + 1] == 114 and buf[i + 2] == 117 and buf[i + 3] == 101:
        return i + 4
    if c == 102 and i + 5 <= n and buf[i + 1] == 97 and buf[i + 2] == 108 and buf[i + 3] == 115 and buf[i + 4] == 101:
        return i + 5
    if is_null(buf, i, n):
        return i + 4
    return -1


@intrinsic
def _word(typingctx, arr, idx):
    """The 8 bytes arr[idx:idx + 8] as one little-endian uint64 (an unaligned load; the
    caller checks idx + 8 <= len(arr))."""
    sig = types.uint64(arr, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return sig, codegen


@njit(cache=True, nogil=True)
def _tail(buf, s, e):
    """The last e - s (< 8) bytes as a uint64."""
    w = np.uint64(0)
    for k in range(e - 1, s - 1, -1):
        w = (w << np.uint64(8)) | np.uint64(buf[k])
    return w


@njit(cache=True, nogil=True)
def hash_spans(buf, starts, ends):
    """A 64-bit hash of each span's bytes, 8 at a time (0 for a span outside the buffer).
    Equal bytes hash equal; callers rule out collisions with `same_spans`."""
    out = np.zeros(len(starts), dtype=np.uint64)
    n = len(buf)
    for r in range(len(starts)):
        s, e = starts[r], ends[r]
        if s < 0 or e > n or e < s:
            continue
        h = np.uint64(e - s) * _MIX
        k = s
        while k + 8 <= e:
            h = (h ^ _word(buf, k)) * _MIX
            h ^= h >> np.uint64(29)
            k += 8
        if k < e:
            h = (h ^ _tail(buf, k, e)) * _MIX
            h ^= h >> np.uint64(29)
        out[r] = h
    return out


@njit(cache=True, nogil=True)
def same_spans(buf, starts, ends, rep_starts, rep_ends):
    """Whether every span holds the same bytes as its representative (rules out hash collisions)."""
    n = len(buf)
    for r in range(len(starts)):
        s, e, rs, re_ = starts[r], ends[r], rep_starts[r], rep_ends[r]
        if e - s != re_ - rs or s < 0 or rs < 0 or e > n or re_ > n:
            return False
        if s == rs:
            continue
        m = e - s
        k = 0
        while k + 8 <= m:
            if _word(buf, s + k) != _word(buf, rs + k):
                return False
            k += 8
        while k < m:
            if buf[s + k] != buf[rs + k]:
                return False
            k += 1
    return True
