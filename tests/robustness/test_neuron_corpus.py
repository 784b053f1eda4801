"""A corpus of malformed Neuron Explorer profiles: each imports or fails in one sentence, leaving nothing
behind - through the Python API and through `trnx import` (exit 0, or exit 2 with one line on stderr)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from interop.neuron_profiles import write_profile
from robustness.contract import import_profile_or_one_sentence
import clirun


def _edit(table: str, fn: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        pq.write_table(fn(pq.read_table(d / f"{table}.parquet")), d / f"{table}.parquet")
    return apply


def _set(name: str, values: Callable[[pa.Table], pa.Array]) -> Callable[[pa.Table], pa.Table]:
    def fn(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index(name)
        return t.set_column(i, name, values(t)) if i >= 0 else t.append_column(name, values(t))
    return fn


def _null_first(name: str) -> Callable[[pa.Table], pa.Array]:
    def values(t: pa.Table) -> pa.Array:
        v = t.column(name).to_pylist()
        v[0] = None
        return pa.array(v, t.column(name).type)
    return values


def _empty_all(d: Path) -> None:
    for f in d.glob("*.parquet"):
        if f.name != "Metadata.parquet":
            pq.write_table(pq.read_table(f).slice(0, 0), f)


def _bytes(table: str, data: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        f = d / f"{table}.parquet"
        f.write_bytes(data(f.read_bytes()))
    return apply


# name -> (damage, expect a valid trace?)
CORPUS: dict[str, tuple[Callable[[Path], None], bool]] = {
    "empty-instruction-file": (_bytes("Instruction", lambda b: b""), False),
    "truncated-instruction": (_bytes("Instruction", lambda b: b[: len(b) // 2]), False),
    "footer-cut": (_bytes("DmaPacket", lambda b: b[:-9]), False),
    "random-bytes": (_bytes("Flow", lambda b: bytes(np.random.default_rng(1).integers(0, 256, len(b), dtype=np.uint8))), False),
    "json-as-metadata": (_bytes("Metadata", lambda b: b'{"profile_schema_version": "7.4.0"}'), False),
    "metadata-no-rows": (_edit("Metadata", lambda t: t.slice(0, 0)), False),
    "version-garbage": (_edit("Metadata", _set("profile_schema_version", lambda t: pa.array(["seven"]))), False),
    "version-older-major": (_edit("Metadata", _set("profile_schema_version", lambda t: pa.array(["6.9.0"]))), False),
    "version-newer-minor": (_edit("Metadata", _set("profile_schema_version", lambda t: pa.array(["7.99.3"]))), True),
    "timestamps-as-float": (_edit("Instruction", _set("start_ts", lambda t: t.column("start_ts").cast(pa.float64(), safe=False))), False),
    "timestamps-int32": (_edit("CcOp", _set("op_id", lambda t: t.column("op_id").cast(pa.int32()))), True),
    "strings-dictionary": (_edit("Instruction", _set("opcode", lambda t: t.column("opcode").dictionary_encode())), True),
    "numbers-float32": (_edit("HbmUsage", _set("current_throughput", lambda t: t.column("current_throughput").cast(pa.float32()))), True),
    "pcore-huge": (_edit("Instruction", _set("pcore_idx", lambda t: pa.array(np.full(t.num_rows, 1 << 40), pa.int64()))), False),
    "pcore-negative": (_edit("DmaPacketAggregated", _set("pcore_idx", lambda t: pa.array(np.full(t.num_rows, -3), pa.int64()))), False),
    "timestamps-before-first": (_edit("Metadata", _set("first_hw_timestamp", lambda t: pa.array([1 << 62]))), True),
    "timestamps-absurd": (_edit("Instruction", _set("start_ts", lambda t: pa.array(np.full(t.num_rows, (1 << 63) - 10), pa.int64()))), False),
    "throttle-k-over-n": (_edit("Throttle", _set("k", lambda t: pa.array([9, 9, 9], pa.int32()))), False),
    "throttle-n-zero": (_edit("Throttle", _set("n", lambda t: pa.array([0, 0, 0], pa.int32()))), False),
    "unknown-engine": (_edit("Instruction", _set("engine", lambda t: pa.array(["cc_core"] * t.num_rows))), True),
    "duplicate-ids": (_edit("Instruction", _set("id", lambda t: pa.array(np.zeros(t.num_rows, np.int64)))), True),
    "flows-to-nowhere": (_edit("Flow", _set("out_id", lambda t: pa.array(np.full(t.num_rows, 987654321), pa.int64()))), True),
    "flow-unknown-table": (_edit("Flow", _set("in_table", lambda t: pa.array(["semaphore"] * t.num_rows))), True),
    "replica-group-garbage": (_edit("CcOp", _set("replica_group", lambda t: pa.array(["[[0, 1" + "[" * 5000] * t.num_rows))), True),
    "operation-unknown": (_edit("CcOp", _set("operation", lambda t: pa.array(["Broadcast"] * t.num_rows))), True),
    "no-instructions": (lambda d: (d / "Instruction.parquet").unlink(), True),
    "no-timeline-tables": (lambda d: [(d / f"{n}.parquet").unlink() for n in ("Instruction", "DmaPacket", "DmaPacketAggregated", "CcOp")], False),
    "directory-named-like-a-table": (lambda d: ((d / "Flow.parquet").unlink(), (d / "Flow.parquet").mkdir()), False),
    "summary-no-rows": (_edit("Summary", lambda t: t.slice(0, 0)), True),
    "summary-strings": (_edit("Summary", _set("total_time", lambda t: pa.array(["slow"]))), False),
    "another-table-in-the-file": (lambda d: (d / "Instruction.parquet").write_bytes((d / "DmaPacket.parquet").read_bytes()), False),
    "required-field-null": (_edit("Instruction", _set("start_ts", _null_first("start_ts"))), False),
    "negative-duration": (_edit("Instruction", _set("duration_ns", lambda t: pa.array(np.full(t.num_rows, -5), pa.int64()))), False),
    "negative-transfer-bytes": (_edit("DmaPacketAggregated", _set("transfer_bytes", lambda t: pa.array(np.full(t.num_rows, -1), pa.int64()))), False),
    "string-as-list": (_edit("Instruction", _set("engine", lambda t: pa.array([["pe"]] * t.num_rows))), False),
    "string-as-binary": (_edit("Instruction", _set("opcode", lambda t: pa.array([b"\xff\xfe"] * t.num_rows, pa.binary()))), False),
    "integer-as-string": (_edit("Instruction", _set("pcore_idx", lambda t: pa.array(["0"] * t.num_rows))), False),
    "no-columns": (lambda d: pq.write_table(pa.table({}), d / "Flow.parquet"), False),
    "no-metadata-file": (lambda d: (d / "Metadata.parquet").unlink(), False),
    "version-newer-major": (_edit("Metadata", _set("profile_schema_version", lambda t: pa.array(["8.0.0"]))), False),
    "metadata-two-rows": (_edit("Metadata", lambda t: pa.concat_tables([t, t])), True),
    "timestamps-uint64": (_edit("Instruction", _set("start_ts", lambda t: t.column("start_ts").cast(pa.uint64()))), True),
    "every-table-empty": (_empty_all, True),
    "names-empty": (_edit("Instruction", _set("opcode", lambda t: pa.array([""] * t.num_rows))), True),
    "counter-nan-and-inf": (_edit("HbmUsage", _set("current_throughput", lambda t: pa.array(
        np.where(np.arange(t.num_rows) % 2 == 0, np.nan, np.inf)))), True),
    "megabyte-name": (_edit("Instruction", _set("hlo_name", lambda t: pa.array(["x" * (1 << 20)] + [None] * (t.num_rows - 1), pa.string()))), True),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_neuron_profile_corpus(tmp_path: Path, name: str) -> None:
    damage, valid = CORPUS[name]
    d = write_profile(tmp_path / "p", layers=1, hlos=2)
    damage(d)
    assert import_profile_or_one_sentence([d], tmp_path / "out.trnx") is valid


def test_the_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 45


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_neuron_profile_corpus_through_trnx_import(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`trnx import DIR` in-process through its real entry point: exit 0 with a trace, or exit 2
    with one `trnx: error:` line and nothing written - never a traceback."""
    damage, valid = CORPUS[name]
    d = write_profile(tmp_path / "p", layers=1, hlos=2)
    damage(d)
    out = tmp_path / "out.trnx"
    code, _, err = clirun.trnx("import", d, "-o", out)
    assert "Traceback" not in err
    if valid:
        assert code == 0 and out.exists(), err
    else:
        assert code == 2 and err.startswith("trnx: error: ") and len(err.strip().splitlines()) == 1, err
        assert not out.exists()
