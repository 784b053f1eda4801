"""A small trace with hand-checkable content for the timeline's model and GUI tests.

Chip 0, core 0 runs, over [0, 100 us):
- TensorMatrix (track 0): 100 x MultiplyMoving of 800 ns every 1000 ns (80% busy),
  except instruction 50 which is a Transpose;
- Vector (track 1): 1000 x TensorTensor of 20 ns every 100 ns (20% busy);
- qSyncIO0 (track 2): 10 DMA transfers hbm->sbuf of 1000 ns and 64 KiB, every 10 us;
- Kernels (track 3): matmul_qkv [0, 50 us) and softmax [50 us, 100 us).
Three ranks (chips 0, 1, 2; cc tracks 4, 5, 6) run two all-reduces: #0 where rank 2
arrives last (at 20 us), #1 where rank 1 arrives last (at 70 us).
Counters on chip 0: HBM Read 100 GB/s then 300 GB/s from 50 us (mean 200), HBM
Write 50 GB/s, and State Buffer Usage on core 0.
Flows: each DMA unblocks the first MultiplyMoving that starts after it ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simcore.trace import write_trace

HARDWARE = {
    "name": "test-trn3",
    "chips": 3,
    "cores_per_chip": 1,
    "tensor": {"rows": 128, "cols": 128, "clock_ghz": 2.4, "peak_tflops": {"bf16": 79.0}, "bf16_flop_weight": {"bf16": 1.0}},
    "hbm": {"capacity_bytes": 144 * 2**30, "bandwidth_gbps": 4900.0},
    "link": {"bandwidth_gbps": 2560.0},
}
DMA_ID0 = 10_000
MM_FLOPS = 2 * 128 * 128 * 512


def timeline_tables(*, interleave: bool = False) -> dict[str, Any]:
    mm_start = np.arange(100, dtype=np.int64) * 1000
    vec_start = np.arange(1000, dtype=np.int64) * 100
    opcodes = ["MultiplyMoving"] * 100 + ["TensorTensor"] * 1000
    opcodes[50] = "Transpose"
    start = np.concatenate([mm_start, vec_start])
    dur = np.concatenate([np.full(100, 800), np.full(1000, 20)]).astype(np.int64)
    track = np.concatenate([np.zeros(100), np.ones(1000)]).astype(np.int32)
    kernel = (start >= 50_000).astype(np.int64)
    instr = {
        "id": np.arange(1100, dtype=np.int64),
        "track_id": track,
        "start_ns": start,
        "dur_ns": dur,
        "opcode": opcodes,
        "kernel_id": kernel,
        "flops": np.where(track == 0, MM_FLOPS, 128 * 64).astype(np.int64),
        "bytes": np.where(track == 0, 65536, 4096).astype(np.int64),
        "dtype": "bf16",
    }
    if interleave:  # rows ordered by time across tracks: the index must sort them itself
        order = np.lexsort((track, start))
        instr = {k: (v[order] if isinstance(v, np.ndarray) else [v[i] for i in order] if isinstance(v, list) else v)
                 for k, v in instr.items()}
    dma_start = np.arange(10, dtype=np.int64) * 10_000
    dma_end = dma_start + 1000
    flows_dst = np.searchsorted(mm_start, dma_end).astype(np.int64)  # first matmul starting at/after the end
    tracks = {
        "track_id": np.arange(10, dtype=np.int32),
        "chip": np.array([0, 0, 0, 0, 0, 1, 2, 0, 0, 0], dtype=np.int32),
        "core": np.array([0, 0, 0, 0, -1, -1, -1, -1, -1, 0], dtype=np.int32),
        "kind": ["tensor_matrix", "vector", "dma_queue", "kernel", "cc", "cc", "cc", "counter", "counter", "counter"],
        "name": ["TensorMatrix", "Vector", "qSyncIO0", "Kernels", "CC", "CC", "CC",
                 "HBM Read Bandwidth", "HBM Write Bandwidth", "State Buffer Usage"],
        "unit": ["", "", "", "", "", "", "", "GB/s", "GB/s", "bytes"],
    }
    arrive = np.array([[10_000, 12_000, 20_000], [60_000, 70_000, 61_000]], dtype=np.int64)
    begin = arrive.max(axis=1)
    end = begin + np.array([5000, 2000])
    coll = {
        "collective_id": np.repeat([0, 1], 3).astype(np.int64),
        "track_id": np.tile([4, 5, 6], 2).astype(np.int32),
        "chip": np.tile([0, 1, 2], 2).astype(np.int32),
        "rank": np.tile([0, 1, 2], 2).astype(np.int32),
        "group_size": np.full(6, 3, dtype=np.int32),
        "kind": "all_reduce",
        "algorithm": "ring",
        "op_id": np.full(6, -1, dtype=np.int64),
        "bytes": np.full(6, 8 * 2**20, dtype=np.int64),
        "arrive_ns": arrive.ravel(),
        "start_ns": np.repeat(begin, 3),
        "end_ns": np.repeat(end, 3),
        "wait_ns": np.repeat(begin, 3) - arrive.ravel(),
        "algo_bw_gbps": np.full(6, 100.0),
        "bus_bw_gbps": np.full(6, 133.0),
    }
    # collectives must be sorted by arrive within a track: rows go by track
    order = np.lexsort((coll["arrive_ns"], coll["track_id"]))
    coll = {k: (v[order] if isinstance(v, np.ndarray) else v) for k, v in coll.items()}
    return {
        "tracks": tracks,
        "instructions": instr,
        "dma": {
            "id": DMA_ID0 + np.arange(10, dtype=np.int64),
            "track_id": np.full(10, 2, dtype=np.int32),
            "start_ns": dma_start,
            "dur_ns": np.full(10, 1000, dtype=np.int64),
            "bytes": np.full(10, 65536, dtype=np.int64),
            "partitions": np.full(10, 128, dtype=np.int32),
            "src": "hbm",
            "dst": "sbuf",
            "kernel_id": (dma_start >= 50_000).astype(np.int64),
        },
        "kernels": {
            "kernel_id": np.array([0, 1], dtype=np.int64),
            "track_id": np.array([3, 3], dtype=np.int32),
            "chip": np.zeros(2, dtype=np.int32),
            "core": np.zeros(2, dtype=np.int32),
            "op_id": np.array([2, 4], dtype=np.int64),
            "name": ["matmul_qkv", "softmax"],
            "start_ns": np.array([0, 50_000], dtype=np.int64),
            "dur_ns": np.array([50_000, 50_000], dtype=np.int64),
            "flops": np.array([50 * MM_FLOPS, 50 * MM_FLOPS], dtype=np.int64),
            "model_flops": np.array([50 * MM_FLOPS, 50 * MM_FLOPS], dtype=np.int64),
            "hbm_read_bytes": np.array([5 * 65536, 5 * 65536], dtype=np.int64),
            "hbm_write_bytes": np.zeros(2, dtype=np.int64),
            "dtype": ["bf16", "bf16"],
        },
        "ops": {
            "op_id": np.arange(5, dtype=np.int64),
            "parent_id": np.array([-1, 0, 1, 0, 3], dtype=np.int64),
            "level": ["model", "layer", "op", "layer", "op"],
            "name": ["tiny-llm", "layer 0", "attention.qkv_proj", "layer 1", "attention.softmax"],
            "kind": ["model", "layer", "matmul", "layer", "softmax"],
            "start_ns": np.array([0, 0, 0, 50_000, 50_000], dtype=np.int64),
            "dur_ns": np.array([100_000, 50_000, 50_000, 50_000, 50_000], dtype=np.int64),
        },
        "collectives": coll,
        "counters": {
            "track_id": np.array([7, 7, 8, 9, 9, 9], dtype=np.int32),
            "time_ns": np.array([0, 50_000, 0, 0, 30_000, 60_000], dtype=np.int64),
            "value": np.array([100.0, 300.0, 50.0, 1e6, 8e6, 2e6]),
        },
        "flows": {
            "src_id": DMA_ID0 + np.arange(10, dtype=np.int64),
            "dst_id": flows_dst,
            "kind": "semaphore",
        },
    }


def write_timeline_trace(path: Path, **kwargs: Any) -> Path:
    return write_trace(path, timeline_tables(**kwargs),
                       meta={"hardware": HARDWARE, "workload": {"name": "tiny-llm", "kind": "model"}})
