"""Small traces with known content, written through the public writer API.

Tests of every layer use these until they need a simulated trace; the content is
chosen so answers can be checked by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simcore.trace import write_trace

HARDWARE = {
    "name": "test-chip",
    "chips": 1,
    "cores_per_chip": 1,
    "tensor": {"rows": 128, "cols": 128, "clock_ghz": 2.4, "peak_tflops": {"bf16": 79.0}, "bf16_flop_weight": {"bf16": 1.0}},
    "hbm": {"capacity_bytes": 144 * 2**30, "bandwidth_gbps": 4900.0},
    "link": {"bandwidth_gbps": 2560.0},
}


def tiny_tables(n_per_track: int = 4) -> dict[str, Any]:
    """Two engine tracks, one DMA queue, one kernel track, one counter, with flows."""
    n = n_per_track
    starts = np.arange(n, dtype=np.int64) * 100
    instr = {
        "id": np.arange(2 * n, dtype=np.int64),
        "track_id": np.repeat(np.array([0, 1], dtype=np.int32), n),
        "start_ns": np.concatenate([starts, starts + 50]),
        "dur_ns": np.full(2 * n, 40, dtype=np.int64),
        "opcode": ["MultiplyMoving"] * n + ["TensorTensor"] * n,
        "kernel_id": np.zeros(2 * n, dtype=np.int64),
        "flops": np.full(2 * n, 1000, dtype=np.int64),
        "bytes": np.full(2 * n, 256, dtype=np.int64),
        "dtype": "bf16",
    }
    return {
        "tracks": {
            "track_id": np.arange(5, dtype=np.int32),
            "chip": np.zeros(5, dtype=np.int32),
            "core": np.array([0, 0, 0, 0, -1], dtype=np.int32),
            "kind": ["tensor_matrix", "vector", "dma_queue", "kernel", "counter"],
            "name": ["TensorMatrix", "Vector", "qSyncIO0", "Kernels", "HBM Read Bandwidth"],
            "unit": ["", "", "", "", "GB/s"],
        },
        "instructions": instr,
        "dma": {
            "id": np.array([100, 101], dtype=np.int64),
            "track_id": np.array([2, 2], dtype=np.int32),
            "start_ns": np.array([0, 200], dtype=np.int64),
            "dur_ns": np.array([90, 90], dtype=np.int64),
            "bytes": np.array([65536, 65536], dtype=np.int64),
            "partitions": np.array([128, 128], dtype=np.int32),
            "src": ["hbm", "hbm"],
            "dst": ["sbuf", "sbuf"],
            "kernel_id": np.zeros(2, dtype=np.int64),
        },
        "kernels": {
            "kernel_id": np.array([0], dtype=np.int64),
            "track_id": np.array([3], dtype=np.int32),
            "chip": np.array([0], dtype=np.int32),
            "core": np.array([0], dtype=np.int32),
            "op_id": np.array([2], dtype=np.int64),
            "name": ["matmul"],
            "start_ns": np.array([0], dtype=np.int64),
            "dur_ns": np.array([n * 100], dtype=np.int64),
            "flops": np.array([2 * n * 1000], dtype=np.int64),
            "model_flops": np.array([2 * n * 1000], dtype=np.int64),
            "hbm_read_bytes": np.array([131072], dtype=np.int64),
            "hbm_write_bytes": np.array([0], dtype=np.int64),
            "dtype": ["bf16"],
        },
        "ops": {
            "op_id": np.array([0, 1, 2], dtype=np.int64),
            "parent_id": np.array([-1, 0, 1], dtype=np.int64),
            "level": ["model", "layer", "op"],
            "name": ["tiny", "layer 0", "mlp.up_proj"],
            "kind": ["model", "layer", "matmul"],
            "start_ns": np.zeros(3, dtype=np.int64),
            "dur_ns": np.full(3, n * 100, dtype=np.int64),
        },
        "counters": {
            "track_id": np.array([4, 4, 4], dtype=np.int32),
            "time_ns": np.array([0, 100, 200], dtype=np.int64),
            "value": np.array([0.0, 720.0, 0.0]),
        },
        "flows": {
            "src_id": np.array([100], dtype=np.int64),
            "dst_id": np.array([0], dtype=np.int64),
            "kind": ["semaphore"],
        },
    }


def write_tiny(path: Path, **kwargs: Any) -> Path:
    """A valid tiny trace at `path`."""
    return write_trace(path, tiny_tables(), meta={"hardware": HARDWARE, "workload": {"name": "tiny"}}, **kwargs)


def reseal(path: Path) -> Path:
    """Record the current checksum of every table file in meta.json, as a tool that edits a
    table and keeps the trace consistent would: tests that rewrite a table on purpose then reach
    the checks behind the checksum (schema, nulls, order)."""
    import json

    from simcore.trace import schema as S
    from simcore.trace.checksum import file_checksum

    meta = json.loads((path / S.META_FILE).read_text())
    for entry in meta["tables"].values():
        for e in entry.get("partitions", [entry]):
            if S.CHECKSUM in e:
                e[S.CHECKSUM] = file_checksum(path / e["file"])
    (path / S.META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return path
