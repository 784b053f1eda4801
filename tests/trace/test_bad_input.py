"""Every way a trace can be broken gives one sentence naming the file and the problem."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from simcore.errors import TraceFormatError
from simcore.trace import TraceWriter, open_trace
from simcore.trace.schema import TABLES
from tracegen import reseal, tiny_tables, write_tiny


def _load(trace: Path, name: str) -> pa.Table:
    """Read a table into memory (not mapped: the tests overwrite the file)."""
    return feather.read_table(trace / f"{name}.arrow", memory_map=False)


def _rewrite_table(trace: Path, name: str, table: pa.Table) -> None:
    feather.write_feather(table, trace / f"{name}.arrow", compression="uncompressed")
    reseal(trace)  # the checks behind the checksum are the point here (test_checksums.py covers it)


def _edit_meta(trace: Path, edit: Callable[[dict], None]) -> None:
    meta = json.loads((trace / "meta.json").read_text())
    edit(meta)
    (trace / "meta.json").write_text(json.dumps(meta))


def truncated(t: Path) -> Path:
    f = t / "instructions.arrow"
    f.write_bytes(f.read_bytes()[:-40])
    return t


def zero_bytes(t: Path) -> Path:
    (t / "dma.arrow").write_bytes(b"")
    return t


def wrong_magic(t: Path) -> Path:
    f = t / "kernels.arrow"
    f.write_bytes(b"PAR1" + f.read_bytes()[4:])
    return t


def missing_table(t: Path) -> Path:
    _edit_meta(t, lambda m: m["tables"].pop("flows"))
    return t


def missing_table_file(t: Path) -> Path:
    (t / "counters.arrow").unlink()
    return t


def missing_column(t: Path) -> Path:
    _rewrite_table(t, "dma", _load(t, "dma").drop_columns(["bytes"]))
    return t


def wrong_column_type(t: Path) -> Path:
    table = _load(t, "instructions")
    i = table.schema.get_field_index("dur_ns")
    _rewrite_table(t, "instructions", table.set_column(i, "dur_ns", table.column("dur_ns").cast(pa.float64())))
    return t


def newer_major(t: Path) -> Path:
    _edit_meta(t, lambda m: m.update(version="2.0"))
    return t


def _instructions_with(t: Path, column: str, values: np.ndarray) -> Path:
    table = _load(t, "instructions")
    i = table.schema.get_field_index(column)
    _rewrite_table(t, "instructions", table.set_column(i, column, pa.array(values, pa.int64())))
    return t


def negative_duration(t: Path) -> Path:
    dur = np.full(8, 40, np.int64)
    dur[5] = -3
    return _instructions_with(t, "dur_ns", dur)


def unsorted_starts(t: Path) -> Path:
    start = np.array([0, 100, 200, 300, 50, 150, 120, 350], np.int64)  # row 6 goes back on track 1
    return _instructions_with(t, "start_ns", start)


def path_is_a_file(t: Path) -> Path:
    f = t.parent / "not_a_dir.trnx"
    f.write_text("hello")
    return f


def nonexistent(t: Path) -> Path:
    return t.parent / "nope.trnx"


def meta_not_json(t: Path) -> Path:
    (t / "meta.json").write_text("{ not json")
    return t


def not_a_trace(t: Path) -> Path:
    shutil.rmtree(t)
    t.mkdir()
    return t


def rows_disagree_with_meta(t: Path) -> Path:
    _edit_meta(t, lambda m: m["tables"]["instructions"].update(rows=9))
    return t


def nulls(t: Path) -> Path:
    table = _load(t, "instructions")
    i = table.schema.get_field_index("flops")
    col = pa.array([1, None, 3, 4, 5, 6, 7, 8], pa.int64())
    _rewrite_table(t, "instructions", table.set_column(i, pa.field("flops", pa.int64()), col))
    return t


CASES = {
    truncated: r"instructions\.arrow is truncated",
    zero_bytes: r"dma\.arrow is empty \(0 bytes\)",
    wrong_magic: r"kernels\.arrow is not an Arrow IPC file",
    missing_table: r"is missing the required table 'flows'",
    missing_table_file: r"counters\.arrow is missing",
    missing_column: r"dma\.arrow lacks the required column 'bytes'",
    wrong_column_type: r"column 'dur_ns' has type double, expected int64",
    newer_major: r"uses trace format 2\.0, newer than this reader \(1\.x\); upgrade",
    negative_duration: r"negative duration at row 5 \(dur_ns=-3\)",
    unsorted_starts: r"is not sorted: row 6 starts before the previous row of track 1",
    path_is_a_file: r"is a file, not a trace directory",
    nonexistent: r"nope\.trnx does not exist",
    meta_not_json: r"meta\.json is not valid JSON",
    not_a_trace: r"is not a trace: it has no meta\.json",
    rows_disagree_with_meta: r"has 8 rows but meta\.json says 9",
    nulls: r"column 'flops' has missing \(null\) values",
}


@pytest.fixture
def broken(tmp_path, request) -> Path:
    return request.param(write_tiny(tmp_path / "t.trnx"))


@pytest.mark.parametrize("broken, message", list(CASES.items()), indirect=["broken"],
                         ids=[f.__name__ for f in CASES])
def test_broken_trace_gives_one_sentence(broken, message):
    with pytest.raises(TraceFormatError, match=message) as err:
        open_trace(broken)
    text = str(err.value)
    assert "\n" not in text and text.endswith(".")


@pytest.mark.parametrize("broken, message", list(CASES.items()), indirect=["broken"],
                         ids=[f.__name__ for f in CASES])
def test_cli_reports_broken_trace_with_exit_2_and_no_traceback(broken, message):
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", "validate", str(broken)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trnx: error: ")
    assert re.search(message, lines[0])
    assert "Traceback" not in proc.stderr


class Interrupted(Exception):
    pass


def test_interrupted_capture_leaves_nothing_at_the_target(tmp_path):
    target = tmp_path / "run.trnx"
    tables = tiny_tables()
    with pytest.raises(Interrupted):
        with TraceWriter(target) as w:
            w.write("tracks", tables["tracks"])
            w.write("instructions", tables["instructions"])
            raise Interrupted  # e.g. Ctrl-C between two batches
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_interrupted_overwrite_keeps_the_old_trace(tmp_path):
    target = write_tiny(tmp_path / "run.trnx")
    with pytest.raises(KeyboardInterrupt):
        with TraceWriter(target, overwrite=True) as w:
            w.write("tracks", tiny_tables()["tracks"])
            raise KeyboardInterrupt
    assert open_trace(target).instructions.num_rows == 8
    assert [p.name for p in tmp_path.iterdir()] == ["run.trnx"]


def test_every_table_is_required(tmp_path):
    """Every table of 1.0 is required; one a later minor version added (sbuf_allocations, 1.4) may be
    missing from an older trace and reads as empty."""
    for name, spec in TABLES.items():
        t = write_tiny(tmp_path / f"{name}.trnx")
        _edit_meta(t, lambda m, name=name: m["tables"].pop(name))
        if spec.required:
            with pytest.raises(TraceFormatError, match=f"required table '{name}'"):
                open_trace(t)
        else:
            trace = open_trace(t)
            assert not trace.has_table(name) and trace.table(name).num_rows == 0
    assert [n for n, s in TABLES.items() if not s.required] == ["sbuf_allocations"]
