"""A corpus of malformed Neuron Explorer profiles: each imports or fails in one sentence, leaving nothing behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from interop.neuron_profiles import write_profile
from robustness.contract import import_profile_or_one_sentence


def _edit(table: str, fn: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        pq.write_table(fn(pq.read_table(d / f"{table}.parquet")), d / f"{table}.parquet")
    return apply


def _set(name: str, values: Callable[[pa.Table], pa.Array]) -> Callable[[pa.Table], pa.Table]:
    def fn(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index(name)
        return t.set_column(i, name, values(t)) if i >= 0 else t.append_column(name, values(t))
    return fn


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
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_neuron_profile_corpus(tmp_path: Path, name: str) -> None:
    damage, valid = CORPUS[name]
    d = write_profile(tmp_path / "p", layers=1, hlos=2)
    damage(d)
    assert import_profile_or_one_sentence([d], tmp_path / "out.trnx") is valid
