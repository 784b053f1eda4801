"""Small hand-built traces whose analysis answers are known, shared by the analysis tests.

`basic_tables()` returns plain dicts (one per table) so a test can tweak a row before
writing; `write(tmp_path, tables, hardware=...)` writes them with simcore's writer.
The numbers the tests expect are worked out in the comments next to the rows.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from simcore.trace import TraceWriter, write_trace

TRN3_LIKE: dict[str, Any] = {
    "name": "trn3-test",
    "chips": 2,
    "cores_per_chip": 2,
    "tensor": {
        "rows": 128,
        "cols": 128,
        "clock_ghz": 2.4,
        "peak_tflops": {"bf16": 79, "fp8": 158, "mxfp8": 315, "mxfp4": 315, "fp32": 20},
        "bf16_flop_weight": {"bf16": 1, "fp8": 0.5, "mxfp8": 0.25, "mxfp4": 0.25, "fp32": 4},
    },
    "hbm": {"capacity_bytes": 144 * 2**30, "bandwidth_gbps": 4900},
    "link": {"bandwidth_gbps": 2560},
}
SPAN = (0, 10_000)

# track ids
T_TENSOR, T_MATRIX, T_VECTOR, T_SCALAR, T_GPSIMD, T_SYNC, T_Q0, T_Q1 = range(8)
T_K00, T_K01, T_CC0, T_K10, T_CC1, T_THR00, T_HBMR0 = range(8, 15)


def _tracks() -> dict[str, list]:
    rows = [
        (0, 0, "tensor", "Tensor", ""),
        (0, 0, "tensor_matrix", "TensorMatrix", ""),
        (0, 0, "vector", "Vector", ""),
        (0, 0, "scalar", "Scalar", ""),
        (0, 0, "gpsimd", "GpSimd", ""),
        (0, 0, "sync", "Sync", ""),
        (0, 0, "dma_queue", "qSyncIO0", ""),
        (0, 0, "dma_queue", "qSyncIO1", ""),
        (0, 0, "kernel", "Kernels", ""),
        (0, 1, "kernel", "Kernels", ""),  # core 1: kernel-level detail only
        (0, -1, "cc", "CC", ""),
        (1, 0, "kernel", "Kernels", ""),
        (1, -1, "cc", "CC", ""),
        (0, 0, "counter", "Throttling", "%"),
        (0, -1, "counter", "HBM Read Bandwidth", "GB/s"),
    ]
    return {
        "track_id": list(range(len(rows))),
        "chip": [r[0] for r in rows],
        "core": [r[1] for r in rows],
        "kind": [r[2] for r in rows],
        "name": [r[3] for r in rows],
        "unit": [r[4] for r in rows],
    }


def _columns(names: tuple[str, ...], rows: list[tuple]) -> dict[str, list]:
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def basic_tables() -> dict[str, dict[str, list]]:
    """chip 0 core 0 has instruction detail; chip 0 core 1 and chip 1 core 0 kernels only.

    Whole-trace answers (span 0..10000 ns):
      tensor engine union [0, 2200) = 2200 ns over 5 instructions (Tensor + TensorMatrix rows)
      vector 600 ns / 2; scalar 200 / 1; gpsimd 0 / 0; sync 10 / 1
      DMA union [0, 600) = 600 ns, 3 transfers, 720896 bytes, 2 under 2 KiB/partition
      kernels: hardware 16_110_000 FLOP, model 16_010_000, BF16-normalised 8_110_000,
               transposes 100_000 (bf16); HBM read 3_600_000, write 565_536
      total active per core: 2300 + 4000 + 5000 = 11300 ns
      collectives: active 3000 + 2000, wait 1000, transfer 4000
      throttling (chip 0 core 0): below 100% for 2000 ns, mean limit 93%
    """
    ins_cols = ("id", "track_id", "start_ns", "dur_ns", "opcode", "kernel_id", "flops", "bytes", "dtype")
    instructions = [
        (1, T_TENSOR, 0, 100, "LoadStationary", 100, 0, 32768, "bf16"),
        (2, T_TENSOR, 1000, 100, "LoadStationary", 100, 0, 32768, "bf16"),
        (3, T_MATRIX, 50, 1000, "MultiplyMoving", 100, 2_000_000, 131072, "bf16"),
        (4, T_MATRIX, 1100, 1000, "MultiplyMoving", 100, 2_000_000, 131072, "bf16"),
        (5, T_MATRIX, 2100, 100, "Transpose", 100, 100_000, 32768, "bf16"),
        (6, T_VECTOR, 1050, 500, "TensorTensor", 100, 0, 65536, "bf16"),
        (7, T_VECTOR, 3000, 100, "Exponential", 101, 10_000, 8192, "bf16"),
        (8, T_SCALAR, 1550, 200, "Activation", 100, 0, 65536, "bf16"),
        (9, T_SYNC, 0, 10, "SemaphoreWait", 100, 0, 0, "bf16"),
    ]
    dma_cols = ("id", "track_id", "start_ns", "dur_ns", "bytes", "partitions", "src", "dst", "kernel_id")
    dma = [
        (20, T_Q0, 0, 400, 128 * 4096, 128, "hbm", "sbuf", 100),
        (21, T_Q0, 400, 200, 128 * 1024, 128, "hbm", "sbuf", 100),  # 1 KiB per partition: small
        (22, T_Q1, 300, 200, 65536, 128, "sbuf", "hbm", 100),  # 512 B per partition: small
    ]
    k_cols = ("kernel_id", "track_id", "chip", "core", "op_id", "name", "start_ns", "dur_ns", "flops",
              "model_flops", "hbm_read_bytes", "hbm_write_bytes", "dtype")
    kernels = [
        (100, T_K00, 0, 0, 12, "matmul_qkv", 0, 2200, 4_100_000, 4_000_000, 600_000, 65_536, "bf16"),
        (101, T_K00, 0, 0, 13, "softmax", 3000, 100, 10_000, 10_000, 0, 0, "bf16"),
        (102, T_K01, 0, 1, 12, "matmul_qkv", 0, 4000, 8_000_000, 8_000_000, 1_000_000, 0, "mxfp8"),
        (103, T_K10, 1, 0, 12, "matmul_qkv", 0, 5000, 4_000_000, 4_000_000, 2_000_000, 500_000, "fp8"),
    ]
    op_cols = ("op_id", "parent_id", "level", "name", "kind", "start_ns", "dur_ns")
    ops = [
        (10, -1, "model", "TestNet", "model", 0, 8000),
        (11, 10, "layer", "layer 0", "layer", 0, 8000),
        (12, 11, "op", "attention.qkv_proj", "matmul", 0, 5000),
        (13, 11, "op", "attention.softmax", "softmax", 3000, 100),
        (14, 11, "op", "all_reduce", "all_reduce", 5000, 3000),
    ]
    cc_cols = ("collective_id", "track_id", "chip", "rank", "group_size", "kind", "algorithm", "op_id", "bytes",
               "arrive_ns", "start_ns", "end_ns", "wait_ns", "algo_bw_gbps", "bus_bw_gbps")
    collectives = [
        (1, T_CC0, 0, 0, 2, "all_reduce", "ring", 14, 1_000_000, 5000, 6000, 8000, 1000, 500.0, 500.0),
        (1, T_CC1, 1, 1, 2, "all_reduce", "ring", 14, 1_000_000, 6000, 6000, 8000, 0, 500.0, 500.0),
    ]
    counters = {
        "track_id": [T_THR00, T_THR00, T_THR00, T_HBMR0],
        "time_ns": [0, 1000, 9000, 0],
        "value": [50.0, 100.0, 80.0, 100.0],
    }
    # 4 waits on 2 (data) which waited on DMA 20 (semaphore, 600 ns after it ended); 8 <- 6 <- 3
    flows = {"src_id": [20, 2, 3, 6], "dst_id": [2, 4, 6, 8], "kind": ["semaphore", "data", "data", "data"]}
    return {
        "tracks": _tracks(),
        "instructions": _columns(ins_cols, instructions),
        "dma": _columns(dma_cols, dma),
        "kernels": _columns(k_cols, kernels),
        "ops": _columns(op_cols, ops),
        "collectives": _columns(cc_cols, collectives),
        "counters": counters,
        "flows": flows,
    }


def write(
    path: Path,
    tables: dict[str, dict[str, list]] | None = None,
    hardware: dict[str, Any] | None = TRN3_LIKE,
    span: tuple[int, int] = SPAN,
    workload: dict[str, Any] | None = None,
    batch_rows: int | None = None,
) -> Path:
    """Write `tables` (default: `basic_tables()`) as a trace at `path`; with `batch_rows`, every
    table goes in record batches of that many rows (a track may then span batches)."""
    tables = copy.deepcopy(tables if tables is not None else basic_tables())
    meta: dict[str, Any] = {"span_ns": list(span), "workload": workload or {"name": "test", "kind": "microbenchmark"}}
    if hardware is not None:
        meta["hardware"] = copy.deepcopy(hardware)
        chips = tables.get("tracks", {}).get("chip")
        if chips is not None and len(chips) and "chips" in meta["hardware"]:  # the system has every chip used
            meta["hardware"]["chips"] = max(meta["hardware"]["chips"], int(max(chips)) + 1)
    if batch_rows is None:
        return write_trace(path, tables, meta)
    with TraceWriter(path, meta) as w:
        for name, cols in tables.items():
            n = len(next(iter(cols.values())))
            for i in range(0, max(n, 1), batch_rows):
                w.write(name, {c: v[i:i + batch_rows] for c, v in cols.items()})
    return w.path


def collective_tables(
    kind: str, arrivals: list[int], nbytes: list[int], op_kind: str, transfer_ns: int = 1000
) -> dict[str, dict[str, list]]:
    """One collective over len(arrivals) chips: each chip computes until it arrives, then all transfer."""
    n = len(arrivals)
    tracks = {"track_id": [], "chip": [], "core": [], "kind": [], "name": [], "unit": []}
    for chip in range(n):
        for kind_, name, core in (("kernel", "Kernels", 0), ("cc", "CC", -1)):
            tracks["track_id"].append(len(tracks["track_id"]))
            tracks["chip"].append(chip)
            tracks["core"].append(core)
            tracks["kind"].append(kind_)
            tracks["name"].append(name)
            tracks["unit"].append("")
    start = max(arrivals)
    tables = basic_tables()
    tables = {name: {c: [] for c in cols} for name, cols in tables.items()}
    tables["tracks"] = tracks
    tables["kernels"] = {
        "kernel_id": list(range(n)), "track_id": [2 * c for c in range(n)], "chip": list(range(n)),
        "core": [0] * n, "op_id": [1] * n, "name": ["expert_mlp"] * n, "start_ns": [0] * n,
        "dur_ns": arrivals, "flops": [1_000_000] * n, "model_flops": [1_000_000] * n,
        "hbm_read_bytes": [100_000] * n, "hbm_write_bytes": [0] * n, "dtype": ["bf16"] * n,
    }
    tables["ops"] = {
        "op_id": [0, 1, 2], "parent_id": [-1, 0, 0], "level": ["model", "op", "op"],
        "name": ["MoENet", "experts", "tokens"], "kind": ["model", "expert_mlp", op_kind],
        "start_ns": [0, 0, min(arrivals)], "dur_ns": [start + transfer_ns, start, start + transfer_ns - min(arrivals)],
    }
    tables["collectives"] = {
        "collective_id": [7] * n, "track_id": [2 * c + 1 for c in range(n)], "chip": list(range(n)),
        "rank": list(range(n)), "group_size": [n] * n, "kind": [kind] * n, "algorithm": ["mesh"] * n,
        "op_id": [2] * n, "bytes": nbytes, "arrive_ns": arrivals, "start_ns": [start] * n,
        "end_ns": [start + transfer_ns] * n, "wait_ns": [start - a for a in arrivals],
        "algo_bw_gbps": [b / transfer_ns for b in nbytes], "bus_bw_gbps": [b / transfer_ns for b in nbytes],
    }
    return tables
