"""Field search (`opcode:X dtype:fp8 dur>10us kernel:matmul_* chip:3`) on a hand-checkable trace,
and against DuckDB SQL on a simulated sample: the same events either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.model.query import query
from explorer.model.timeline.field_search import field_search, is_field_query, parse
from explorer.model.timeline.trace_index import TraceIndex
from model.timeline_traces import DMA_ID0, write_timeline_trace
from simcore.errors import UserError
from simcore.trace import open_trace

DECODE = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-8b-decode.trnx"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return TraceIndex.build(open_trace(write_timeline_trace(tmp_path_factory.mktemp("fs") / "t.trnx")))


@pytest.fixture(scope="module")
def decode():
    return TraceIndex.build(open_trace(DECODE))


@pytest.mark.parametrize("q, count", [
    ("opcode:MultiplyMoving", 99),                 # instruction 50 is a Transpose
    ("opcode:multiply*,transpose", 100),           # alternatives, case-insensitive glob
    ("opcode:Multiply", 0),                        # no wildcard: the whole name
    ("dur>500ns type:instruction", 100),           # the 800 ns tensor instructions, not the 20 ns vector ones
    ("dur<=20 type:instruction", 1000),
    ("kernel:softmax", 1),                         # alone, a kernel name finds the kernel
    ("kernel:softmax opcode:TensorTensor", 500),   # with an event-level field, the instructions inside it
    ("kernel:softmax type:dma", 5),
    ("chip:1,2 type:collective", 4),
    ("chip>0", 4),
    ("bytes>=64KiB type:dma", 10),
    ("bytes>=8MiB", 6),                            # the all-reduces' message size
    ("start<10us type:instruction", 110),
    ("engine:Vector dur:20", 1000),
    ("-opcode:MultiplyMoving type:instruction", 1001),
    ("op:*softmax", 1),
    (f"id:{DMA_ID0 + 3}", 1),
    ("matmul opcode:Transpose", 0),                # a bare word keeps the plain search's meaning, ANDed
    ("type:kernel matmul", 1),
    ("op:attention.* opdur>=50us", 2),             # the kernels of ops that took 50 us or more
    ("opdur>=50us opstart>=50us", 1),              # alone too: the op starting at 50 us has the softmax kernel
    ("opstart>=50us opcode:TensorTensor", 500),    # with an event-level field, the instructions of those ops' kernels
    ("opdur<50us", 0),
    ("track_id:1 type:instruction", 1000),         # the Vector row
    ("track_id:0,1 -track_id:1", 100),
])
def test_counts(index, q, count):
    assert is_field_query(q) or q.split()[0].isalpha()
    assert field_search(index, q).count == count


def test_hits_step_in_time_order(index):
    hits = field_search(index, "kernel:softmax opcode:TensorTensor")
    ref, rank = hits.step(None, 1)
    assert rank == 0 and index.interval(ref) == (50_000, 50_020)
    ref, rank = hits.step(None, -1)
    assert rank == 499 and index.interval(ref) == (99_900, 99_920)


@pytest.mark.parametrize("q, says", [
    ("colour:red", "unknown search field 'colour'"),
    ("dur>fast", "'dur' needs a time like 10us"),
    ("opcode>3", "'opcode' is a name"),
    ("type:thing", "type:thing is not one of"),
    ("bytes>1,2", "compares with one value"),
])
def test_bad_fields_are_one_sentence(q, says):
    with pytest.raises(UserError, match=says):
        parse(q)


@pytest.mark.parametrize("q, sql", [
    ("opcode:MultiplyMoving dur>=300ns", "SELECT count(*) FROM instructions WHERE opcode = 'MultiplyMoving' AND dur_ns >= 300"),
    ("kernel:*flash* type:instruction", "SELECT count(*) FROM instructions i JOIN kernels k USING (kernel_id) WHERE k.name LIKE '%flash%'"),
    ("type:dma bytes>=1MiB", "SELECT count(*) FROM dma WHERE bytes >= 1048576"),
    ("type:kernel dur>10us", "SELECT count(*) FROM kernels WHERE dur_ns > 10000"),
    ("op:attention.fused_qkv opdur>19us", "SELECT count(*) FROM kernels k JOIN ops o USING (op_id) "
                                                "WHERE o.name = 'attention.fused_qkv' AND o.dur_ns > 19000"),
    ("opdur>100us type:instruction opstart<2ms", "SELECT count(*) FROM instructions i JOIN kernels k USING (kernel_id) "
                                                 "JOIN ops o ON o.op_id = k.op_id WHERE o.dur_ns > 100000 AND o.start_ns < 2000000"),
])
def test_same_events_as_sql(decode, q, sql):
    want = query(decode.trace, sql).column(0)[0].as_py()
    assert want > 0 and field_search(decode, q).count == want
