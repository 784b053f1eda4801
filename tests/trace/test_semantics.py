"""Ids, times, counts and hardware figures checked across a trace's tables (issue 12, items 5 and 10).

Each damaged trace is written through the public writer (so it is well-formed Arrow) and run
through the real CLI: `trnx validate` and every command that reads the trace agree, refusing it
with the same one sentence (exit 2), never a traceback or an out-of-memory kill. Traces that are
odd but valid (sparse chip numbers, a 2^62 ns kernel) summarise in bounded memory.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clirun import one_sentence_error, trnx
from simcore.trace import write_trace
from tracegen import HARDWARE, tiny_tables

Edit = Callable[[dict[str, Any], dict[str, Any]], None]


def _tracks(column: str, values: list[int]) -> Edit:
    def edit(t: dict[str, Any], meta: dict[str, Any]) -> None:
        t["tracks"][column] = np.array(values, np.int32)
    return edit


def _set(table: str, column: str, row: int, value: int) -> Edit:
    def edit(t: dict[str, Any], meta: dict[str, Any]) -> None:
        t[table][column] = np.array(t[table][column]).copy()
        t[table][column][row] = value
    return edit


def _hw(dotted: str, value: Any) -> Edit:
    def edit(t: dict[str, Any], meta: dict[str, Any]) -> None:
        node = meta["hardware"]
        *path, key = dotted.split(".")
        for p in path:
            node = node[p]
        node[key] = value
    return edit


def _past_2_61(t: dict[str, Any], meta: dict[str, Any]) -> None:
    t["kernels"]["dur_ns"] = np.array([2**61 + 1], np.int64)
    meta["span_ns"] = [0, 400]  # a span that hides it: the rows themselves are checked too


def _negative_flops(t: dict[str, Any], meta: dict[str, Any]) -> None:
    t["kernels"]["flops"] = np.array([-8000], np.int64)


# name -> (edit, what the sentence must say)
REFUSED: dict[str, tuple[Edit, str]] = {
    "chip 2^25 (one flipped bit)": (_tracks("chip", [0, 0, 0, 0, 2**25]), "has chip 33554432, but meta.json's hardware has 1 chip"),
    "negative chip": (_tracks("chip", [0, 0, 0, 0, -5]), "has chip -5"),
    "core 2^25": (_tracks("core", [0, 2**25, 0, 0, -1]), "has core 33554432"),
    "negative core": (_tracks("core", [0, -7, 0, 0, -1]), "has core -7"),
    "track id 2^30": (_tracks("track_id", [0, 1, 2, 3, 2**30]), "track ids must number the 5 tracks 0..4"),
    "negative track id": (_tracks("track_id", [0, 1, 2, 3, -6]), "has track_id -6"),
    "duplicate track id": (_tracks("track_id", [0, 1, 2, 2, 4]), "lists track_id 2 twice"),
    "instruction on track 2^31-1": (_set("instructions", "track_id", 7, 2**31 - 1), "refers to track 2147483647"),
    "instruction on track -6": (_set("instructions", "track_id", 7, -6), "refers to track -6"),
    "dma on a missing track": (_set("dma", "track_id", 1, 9), "refers to track 9, which the tracks table lacks"),
    "kernel on track -6": (_set("kernels", "track_id", 0, -6), "'kernels' refers to track -6"),
    "counter on a missing track": (_set("counters", "track_id", 2, 99), "'counters' refers to track 99"),
    "kernel chip 2^25": (_set("kernels", "chip", 0, 2**25), "'kernels' has chip 33554432"),
    "start + dur overflows int64": (_set("instructions", "dur_ns", 7, 2**63 - 1), "ends after 2^61 ns"),
    "start + dur past 2^61 ns": (_past_2_61, "'kernels' row 0 ends after 2^61 ns"),
    "a sample 2^62 ns before zero": (_set("counters", "time_ns", 0, -(2**62)), "-4611686018427387904"),
    "negative flops": (_negative_flops, "negative flops"),
    "negative dma bytes": (_set("dma", "bytes", 0, -1), "negative bytes"),
    "peak_tflops a string": (_hw("tensor.peak_tflops", "lots"), "hardware.tensor.peak_tflops must map each dtype to a positive number"),
    "peak_tflops entry a string": (_hw("tensor.peak_tflops.bf16", "lots"), "hardware.tensor.peak_tflops"),
    "cores_per_chip a string": (_hw("cores_per_chip", "eight"), "hardware.cores_per_chip must be a whole number"),
    "cores_per_chip 2^62": (_hw("cores_per_chip", 2**62), "hardware.cores_per_chip must be a whole number from 1 to 4,096"),
    "clock negative": (_hw("tensor.clock_ghz", -2.4), "hardware.tensor.clock_ghz must be a positive number"),
    "hbm bandwidth a string": (_hw("hbm.bandwidth_gbps", "fast"), "hardware.hbm.bandwidth_gbps"),
}


def _write(tmp_path: Path, edit: Edit | None = None, name: str = "t.trnx") -> Path:
    t, meta = tiny_tables(), {"hardware": copy.deepcopy(HARDWARE), "workload": {"name": "tiny"}}
    if edit is not None:
        edit(t, meta)
    return write_trace(tmp_path / name, t, meta=meta)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_validate_and_every_reader_refuse_with_the_same_sentence(case: str, tmp_path: Path) -> None:
    edit, expected = REFUSED[case]
    trace = _write(tmp_path, edit)
    said = one_sentence_error(trnx("validate", trace))
    assert expected in said
    for args in (("summary", trace), ("diff", trace, trace),
                 ("export", trace, "--format", "chrome-json", "-o", tmp_path / "t.json"),
                 ("export", trace, "--format", "perfetto", "-o", tmp_path / "t.pftrace")):
        assert one_sentence_error(trnx(*args)) == said, args
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "t.pftrace").exists()


def _meta_edit(trace: Path, key: str, value: Any) -> None:
    m = json.loads((trace / "meta.json").read_text())
    m[key] = value
    (trace / "meta.json").write_text(json.dumps(m))


def test_a_reversed_span_is_refused_not_a_negative_total_time(tmp_path: Path) -> None:
    trace = _write(tmp_path)
    _meta_edit(trace, "span_ns", [1000, 0])
    said = one_sentence_error(trnx("validate", trace))
    assert "span_ns [1000, 0]; it must be [start, end] with start <= end" in said
    assert one_sentence_error(trnx("summary", trace)) == said


def test_sparse_chip_numbers_summarise_in_memory_sized_by_what_is_there(tmp_path: Path) -> None:
    """Chips 0 and 2^20 - 1 of a 2^20-chip system, core 4095 of 4096: units are the pairs
    present, not a chips x cores grid (which would need ~34 GB here)."""
    def edit(t: dict[str, Any], meta: dict[str, Any]) -> None:
        meta["hardware"].update(chips=2**20, cores_per_chip=4096)
        t["tracks"]["chip"] = np.array([0, 0, 0, 2**20 - 1, 2**20 - 1], np.int32)
        t["tracks"]["core"] = np.array([0, 4095, 0, 4095, -1], np.int32)
        t["kernels"]["chip"] = np.array([2**20 - 1], np.int32)
        t["kernels"]["core"] = np.array([4095], np.int32)
    trace = _write(tmp_path, edit)
    assert trnx("validate", trace).code == 0
    res = trnx("summary", trace, "--json", "--no-recommendations")
    assert res.code == 0, res.err
    s = json.loads(res.out)["metrics"]
    assert s["chip_count"] == 2 and s["kernel_count"] == 1


def test_a_kernel_of_2_61_ns_summarises(tmp_path: Path) -> None:
    """The longest time the format allows: groups no longer share one int64 time line."""
    trace = _write(tmp_path, _set("kernels", "dur_ns", 0, 2**61))
    assert trnx("validate", trace).code == 0
    res = trnx("summary", trace, "--json", "--no-recommendations")
    assert res.code == 0, res.err
    assert json.loads(res.out)["metrics"]["total_time_ns"] == 2**61


def test_the_clean_tiny_trace_passes(tmp_path: Path) -> None:
    trace = _write(tmp_path)
    assert trnx("validate", trace).code == 0
    assert trnx("summary", trace).code == 0
