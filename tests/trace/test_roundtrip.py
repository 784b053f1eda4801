"""Writer -> reader -> pandas round trips through the public API."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import explorer
from simcore.trace.checksum import file_checksum
from simcore.errors import UserError
from simcore.trace import TraceWriter, open_trace
from simcore.trace import schema as S
from simcore.trace.schema import TABLES
from tracegen import tiny_tables, write_tiny


def test_tiny_trace_round_trips_to_pandas(tmp_path):
    path = write_tiny(tmp_path / "t.trnx")
    trace = explorer.open_trace(path)
    df = trace.to_pandas("instructions")
    want = tiny_tables()["instructions"]
    assert list(df["start_ns"]) == list(want["start_ns"])
    assert list(df["opcode"]) == want["opcode"]
    assert set(df["dtype"]) == {"bf16"}
    assert isinstance(df["opcode"].dtype, pd.CategoricalDtype)
    assert trace.span_ns == (0, 400)  # kernel ends at 4 * 100
    assert trace.hardware["name"] == "test-chip"
    assert set(trace.table_names) == set(TABLES)
    assert trace.instructions.num_rows == 8
    assert trace.flows.to_pylist() == [{"src_id": 100, "dst_id": 0, "kind": "semaphore"}]


def test_tables_are_memory_mapped_not_copied(tmp_path):
    n = 200_000
    path = tmp_path / "mm.trnx"
    with TraceWriter(path) as w:
        w.write("tracks", tiny_tables()["tracks"])
        w.write("instructions", {"id": np.arange(n), "track_id": np.zeros(n, np.int32),
                                 "start_ns": np.arange(n), "dur_ns": 1, "opcode": "X",
                                 "kernel_id": -1, "flops": 0, "bytes": 0, "dtype": "bf16"})
    before = pa.total_allocated_bytes()
    table = open_trace(path).instructions
    assert table.nbytes > 8 * n
    # memory-mapped: the column buffers live in the file mapping, not the Arrow pool
    assert pa.total_allocated_bytes() - before < table.nbytes / 10


def test_unwritten_tables_are_written_empty_with_their_schema(tmp_path):
    path = tmp_path / "only_tracks.trnx"
    with TraceWriter(path) as w:
        w.write("tracks", tiny_tables()["tracks"])
    trace = open_trace(path)
    assert trace.instructions.num_rows == 0
    assert trace.instructions.schema == TABLES["instructions"].schema
    assert trace.span_ns == (0, 0)


def test_streamed_batches_share_one_dictionary(tmp_path):
    path = tmp_path / "s.trnx"
    with TraceWriter(path) as w:
        w.write("tracks", tiny_tables()["tracks"])
        for i, ops in enumerate((["B", "A"], ["C", "A"], ["A", "D"])):
            w.write("instructions", {
                "id": np.array([2 * i, 2 * i + 1]), "track_id": np.array([0, 0], np.int32),
                "start_ns": np.array([10 * i, 10 * i + 5]), "dur_ns": np.array([1, 1]), "opcode": ops,
                "kernel_id": -1, "flops": 0, "bytes": 0, "dtype": "bf16"})
    col = open_trace(path).instructions.column("opcode")
    assert col.to_pylist() == ["B", "A", "C", "A", "A", "D"]
    assert all(c.dictionary.to_pylist() == ["B", "A", "C", "D"] for c in col.chunks)


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_compressed_traces_read_back(tmp_path, compression):
    path = write_tiny(tmp_path / "c.trnx", compression=compression)
    trace = open_trace(path)
    assert trace.meta["compression"] == compression
    assert trace.to_pandas("dma")["bytes"].sum() == 131072


def test_partitioned_table_loads_one_chip_or_all(tmp_path):
    path = tmp_path / "p.trnx"
    base = tiny_tables()["instructions"]
    with TraceWriter(path) as w:
        w.write("tracks", tiny_tables()["tracks"])
        for chip in range(3):
            w.write("instructions", {**base, "id": base["id"] + 100 * chip,
                                     "opcode": [f"op{chip}"] * len(base["id"])}, chip=chip)
    assert (path / "instructions" / "chip=1" / "part-0.arrow").is_file()
    trace = open_trace(path)
    assert trace.partition_chips("instructions") == [0, 1, 2]
    assert trace.row_count("instructions") == 24
    one = trace.table("instructions", chips=[1])
    assert one.num_rows == 8 and set(one.column("opcode").to_pylist()) == {"op1"}
    allc = trace.instructions.column("opcode")
    # codes agree across partitions: every chunk carries the table's whole vocabulary
    assert {tuple(c.dictionary.to_pylist()) for c in allc.chunks} == {("op0", "op1", "op2")}
    assert trace.to_pandas("instructions")["opcode"].value_counts().to_dict() == {"op0": 8, "op1": 8, "op2": 8}


def test_meta_json_records_format_rows_and_caller_meta(tmp_path):
    path = write_tiny(tmp_path / "m.trnx")
    meta = json.loads((path / "meta.json").read_text())
    assert meta["format"] == "trnx-trace" and meta["version"] == S.FORMAT_VERSION
    entry = meta["tables"]["instructions"]
    assert entry == {"file": "instructions.arrow", "rows": 8, "checksum": file_checksum(path / "instructions.arrow")}
    assert entry["checksum"].startswith("blake3-64MiB:") and len(entry["checksum"]) == 13 + 64
    assert meta["workload"] == {"name": "tiny"}


def test_writer_refuses_to_overwrite_unless_asked(tmp_path):
    path = write_tiny(tmp_path / "o.trnx")
    with pytest.raises(UserError, match="already exists"):
        write_tiny(path)
    write_tiny(path, overwrite=True)
    assert open_trace(path).instructions.num_rows == 8
    assert [p.name for p in tmp_path.iterdir()] == ["o.trnx"]


def test_writes_are_deterministic(tmp_path):
    a = write_tiny(tmp_path / "a.trnx")
    b = write_tiny(tmp_path / "b.trnx")
    for f in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


def test_ten_million_rows_round_trip(tmp_path):
    """The issue's scale: 10M instructions streamed in batches, read back through pandas."""
    n, batch = 10_000_000, 1_000_000
    path = tmp_path / "big.trnx"
    opcodes = np.array(["MultiplyMoving", "LoadStationary", "TensorTensor", "Activation"])
    with TraceWriter(path) as w:
        w.write("tracks", {"track_id": np.arange(4, dtype=np.int32), "chip": 0, "core": 0,
                           "kind": ["tensor_matrix", "tensor", "vector", "scalar"],
                           "name": ["TensorMatrix", "Tensor", "Vector", "Scalar"], "unit": ""})
        for b in range(n // batch):
            i = np.arange(b * batch, (b + 1) * batch, dtype=np.int64)
            w.write("instructions", {
                "id": i, "track_id": (i // (n // 4)).astype(np.int32), "start_ns": (i % (n // 4)) * 10,
                "dur_ns": np.full(batch, 7, np.int64), "opcode": (i % 4, opcodes), "kernel_id": i // 1000,
                "flops": i % 97, "bytes": np.full(batch, 64, np.int64), "dtype": "bf16"})
    trace = open_trace(path)
    df = trace.to_pandas("instructions")
    assert len(df) == n
    assert df["id"].iloc[-1] == n - 1
    assert df["start_ns"].iloc[n // 4 - 1] == (n // 4 - 1) * 10
    assert df["opcode"].value_counts()["TensorTensor"] == n // 4
    assert int(df["flops"].sum()) == int((np.arange(n) % 97).sum())
