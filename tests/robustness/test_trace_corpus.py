"""Byte-level damage to Arrow traces: every case opens as a valid trace or fails in one sentence.

tests/trace/test_bad_input.py checks the named, structural cases (missing tables,
wrong types, unsorted rows) and their exact sentences; this corpus is about damaged
bytes - truncation, flipped bytes, garbage - in table files and meta.json, plus a
hypothesis fuzz that mutates valid files at random.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustness.contract import open_or_one_sentence
from robustness.mutations import JSON_VALUES, MUTATION, mutate
from tracegen import write_tiny


def _bytes_edit(name: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(t: Path) -> None:
        f = t / name
        f.write_bytes(edit(f.read_bytes()))
    return apply


def _flip(at: float, count: int = 8) -> Callable[[bytes], bytes]:
    def edit(b: bytes) -> bytes:
        i = int(len(b) * at)
        return b[:i] + bytes((x ^ 0xA5) for x in b[i : i + count]) + b[i + count :]
    return edit


def _meta(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(t: Path) -> None:
        m = json.loads((t / "meta.json").read_text())
        out = edit(m)
        (t / "meta.json").write_text(json.dumps(m if out is None else out))
    return apply


CASES: dict[str, Callable[[Path], None]] = {}
for table in ("instructions", "tracks", "dma", "counters"):
    f = f"{table}.arrow"
    CASES[f"{table}-truncated-half"] = _bytes_edit(f, lambda b: b[: len(b) // 2])
    CASES[f"{table}-truncated-footer"] = _bytes_edit(f, lambda b: b[:-10])
    CASES[f"{table}-header-only"] = _bytes_edit(f, lambda b: b[:8])
    CASES[f"{table}-garbage-appended"] = _bytes_edit(f, lambda b: b + b"\x00garbage" * 10)
    for at in (0.1, 0.3, 0.5, 0.7, 0.9):
        CASES[f"{table}-flipped-at-{int(at * 100)}%"] = _bytes_edit(f, _flip(at))
CASES.update({
    "meta-truncated": _bytes_edit("meta.json", lambda b: b[: len(b) // 2]),
    "meta-binary": _bytes_edit("meta.json", lambda b: bytes(range(256))),
    "meta-invalid-utf8": _bytes_edit("meta.json", lambda b: b.replace(b"tiny", b"\xff\xfe\xfd\xfc")),
    "meta-control-chars": _bytes_edit("meta.json", lambda b: b.replace(b'"tiny"', b'"ti\x01ny"')),
    "meta-empty": _bytes_edit("meta.json", lambda b: b""),
    "meta-list": _meta(lambda m: [m]),
    "meta-tables-null": _meta(lambda m: m.update(tables=None)),
    "meta-table-file-number": _meta(lambda m: m["tables"]["dma"].update(file=5)),
    "meta-table-file-escapes": _meta(lambda m: m["tables"]["dma"].update(file="../../../../etc/passwd")),
    "meta-table-file-is-dir": _meta(lambda m: m["tables"]["dma"].update(file=".")),
    "meta-partitions-garbage": _meta(lambda m: m["tables"]["dma"].update(partitions=[{"chip": "x"}])),
    "meta-rows-string": _meta(lambda m: m["tables"]["dma"].update(rows="many")),
    "meta-rows-negative": _meta(lambda m: m["tables"]["dma"].update(rows=-1)),
    "meta-span-floats": _meta(lambda m: m.update(span_ns=[0.5, 1e300])),
    "meta-version-number": _meta(lambda m: m.update(version=1.0)),
    "meta-hardware-list": _meta(lambda m: m.update(hardware=[1, 2])),
})


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 40


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("valid") / "tiny.trnx")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(CASES))
def test_damaged_trace_opens_or_fails_in_one_sentence(name: str, valid: Path, tmp_path: Path) -> None:
    t = tmp_path / "t.trnx"
    shutil.copytree(valid, t)
    CASES[name](t)
    open_or_one_sentence(t)


@pytest.mark.timeout(300)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=st.sampled_from(["meta.json", "tracks.arrow", "instructions.arrow", "dma.arrow", "kernels.arrow",
                             "ops.arrow", "collectives.arrow", "counters.arrow", "flows.arrow"]),
       ops=st.lists(MUTATION, min_size=1, max_size=4))
def test_fuzzed_trace_files(valid: Path, file: str, ops: list[tuple[str, float, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        t = Path(d) / "t.trnx"
        shutil.copytree(valid, t)
        f = t / file
        f.write_bytes(mutate(f.read_bytes(), ops))
        open_or_one_sentence(t)


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(["format", "version", "span_ns", "tables", "hardware", "workload", "compression", "time_unit"]),
       value=JSON_VALUES)
def test_fuzzed_meta_values(valid: Path, key: str, value: object) -> None:
    with tempfile.TemporaryDirectory() as d:
        t = Path(d) / "t.trnx"
        shutil.copytree(valid, t)
        m = json.loads((t / "meta.json").read_text())
        m[key] = value
        (t / "meta.json").write_text(json.dumps(m))
        open_or_one_sentence(t)


@pytest.mark.parametrize("bad", [99, -1, 2**31 - 1])
def test_rows_on_undefined_tracks_never_crash_analyses_or_exports(bad: int, tmp_path: Path) -> None:
    """The format allows a row whose track the tracks table lacks; consumers must cope."""
    import numpy as np

    from simcore.trace import write_trace
    from tracegen import HARDWARE, tiny_tables

    t = tiny_tables()
    t["instructions"]["track_id"] = np.where(np.arange(8) == 7, bad, t["instructions"]["track_id"]).astype(np.int32)
    t["dma"]["track_id"] = np.array([2, bad], dtype=np.int32)
    t["counters"]["track_id"] = np.array([4, 4, bad], dtype=np.int32)
    open_or_one_sentence(write_trace(tmp_path / "t.trnx", t, meta={"hardware": HARDWARE}))


# -- ids, times, counts and hardware figures (issue 12 items 5, 7, 10): any value in any id,
# -- time or count column, or in any hardware key analyses read, validates and summarises or
# -- is refused in one sentence; nothing is sized by a value read from the file.
INT_COLUMNS = [(t, c) for t, cols in {
    "tracks": ("track_id", "chip", "core"), "instructions": ("track_id", "start_ns", "dur_ns", "flops", "bytes"),
    "dma": ("track_id", "start_ns", "dur_ns", "bytes", "partitions"),
    "kernels": ("track_id", "chip", "core", "start_ns", "dur_ns", "flops", "model_flops", "hbm_read_bytes"),
    "ops": ("start_ns", "dur_ns"), "counters": ("track_id", "time_ns"),
}.items() for c in cols]
EDGES = [0, 1, -1, 2**25, -(2**25), 2**31 - 1, -(2**31), 2**61, 2**61 + 1, 2**62, 2**63 - 1, -(2**63)]


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None)
@given(where=st.sampled_from(INT_COLUMNS), row=st.integers(0, 7),
       value=st.sampled_from(EDGES) | st.integers(-(2**63), 2**63 - 1))
def test_fuzzed_ids_times_and_counts(where: tuple[str, str], row: int, value: int) -> None:
    import numpy as np

    from simcore.trace import write_trace
    from tracegen import HARDWARE, tiny_tables

    table, column = where
    t = tiny_tables()
    col = np.array(t[table][column]).copy()
    if col.dtype == np.int32 and not -(2**31) <= value < 2**31:
        value = int(np.int64(value).astype(np.int32))  # what a flipped bit in an int32 column can hold
    col[row % len(col)] = value
    t[table][column] = col
    with tempfile.TemporaryDirectory() as d:
        open_or_one_sentence(write_trace(Path(d) / "t.trnx", t, meta={"hardware": HARDWARE}))


HARDWARE_KEYS = ["chips", "cores_per_chip", "tensor.rows", "tensor.cols", "tensor.clock_ghz", "tensor.peak_tflops",
                 "tensor.peak_tflops.bf16", "tensor.bf16_flop_weight", "tensor.bf16_flop_weight.bf16",
                 "hbm.capacity_bytes", "hbm.bandwidth_gbps", "link.bandwidth_gbps", "tensor", "hbm"]
NUMBERS = st.sampled_from([0, -1, 1e-300, 1e300, 2**62, 2**62 * 1.0, "lots", True, [], {}, None, 0.5])


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(HARDWARE_KEYS), value=NUMBERS | JSON_VALUES)
def test_fuzzed_hardware_values(key: str, value: object) -> None:
    import copy

    from tracegen import HARDWARE, tiny_tables
    from simcore.trace import write_trace

    hw = copy.deepcopy(HARDWARE)
    node = hw
    *path, last = key.split(".")
    for p in path:
        node = node[p]
    node[last] = value
    with tempfile.TemporaryDirectory() as d:
        open_or_one_sentence(write_trace(Path(d) / "t.trnx", tiny_tables(), meta={"hardware": hw}))
