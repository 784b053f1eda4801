"""Hypothesis strategies the fuzz tests share: byte-level damage to a valid file, and JSON values
to put where a reader expects something else."""

from __future__ import annotations

from hypothesis import strategies as st

MUTATION = st.tuples(st.sampled_from(["flip", "truncate", "insert", "delete", "zero"]), st.floats(0, 1), st.binary(min_size=1, max_size=16))


def mutate(data: bytes, ops: list[tuple[str, float, bytes]]) -> bytes:
    b = bytearray(data)
    for op, where, blob in ops:
        i = min(int(where * len(b)), max(len(b) - 1, 0))
        if op == "flip" and b:
            b[i] ^= blob[0] | 1
        elif op == "truncate":
            del b[i:]
        elif op == "insert":
            b[i:i] = blob
        elif op == "delete":
            del b[i : i + len(blob)]
        elif op == "zero":
            b[i : i + len(blob)] = bytes(len(b[i : i + len(blob)]))
    return bytes(b)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
