"""A small hand-written two-rank Kineto trace whose breakdown is computed by hand.

Times in us (Kineto's unit). Rank 0: GPU busy 100..340 with a 40 us hole, an
all-reduce half hidden behind a GEMM; rank 1 arrives at the all-reduce 50 us later.

rank 0: gemm 100-150, gemm 200-300 (stream 7); nccl 120-180 (stream 20); memcpy 320-340
  window 240, busy 200 -> idle 40, compute 150, non-compute 50; overlap 30/60 = 50 %
rank 1: gemm 100-170, gemm 250-300 (stream 7); nccl 170-180 (stream 20)
  window 200, busy 130 -> idle 70, compute 120, non-compute 10; overlap 0/10 = 0 %
all-reduce: arrive 120 (r0), 170 (r1); start 170; waits 50 and 0 us; rank 1 is the straggler.
rank 0 GPU memory allocated: 1000 B at 95, 5000 B at 150, 2000 B at 300.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
COMM_ARGS = {
    "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
    "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
}


def _x(cat: str, name: str, ts: float, dur: float, pid: Any, tid: Any, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def rank_events(rank: int) -> list[dict[str, Any]]:
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32"
    if rank == 0:
        k = [(100, 50, gemm, 7, 11), (200, 100, gemm, 7, 13), (120, 60, NCCL, 20, 12)]
        copy = [(320, 20)]
    else:
        k = [(100, 70, gemm, 7, 11), (250, 50, gemm, 7, 13), (170, 10, NCCL, 20, 12)]
        copy = []
    ev: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        _x("user_annotation", "ProfilerStep#1", 90, 260, 1000, 1000),
        _x("cpu_op", "aten::mm", 95, 8, 1000, 1000, **{"External id": 11}),
        _x("cpu_op", "record_param_comms", 110, 5, 1000, 1000, **{"External id": 12}, **COMM_ARGS),
        _x("cpu_op", "aten::mm", 190, 8, 1000, 1000, **{"External id": 13}),
        _x("python_function", "torch/nn/modules/module.py(1501): _call_impl", 91, 200, 1000, 1000),
        _x("cuda_runtime", "cudaLaunchKernel", 96, 3, 1000, 1000, correlation=1),
    ]
    for ts, dur, name, stream, ext in k:
        args = {"device": 0, "stream": stream, "correlation": ext + 100, "External id": ext}
        if name == NCCL:
            args.update(COMM_ARGS)
        ev.append(_x("kernel", name, ts, dur, 0, stream, **args))
    if rank == 0:  # allocator samples (profile_memory=True): GPU 0, and one CPU sample that is not imported
        for ts, total, dev_type in ((95, 1000, 1), (150, 5000, 1), (300, 2000, 1), (120, 777, 0)):
            ev.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1000, "tid": 1000, "ts": ts, "s": "t",
                       "args": {"Device Type": dev_type, "Device Id": 0, "Addr": 1234, "Bytes": 512,
                                "Total Allocated": total, "Total Reserved": 8192}})
    for ts, dur in copy:
        ev.append(_x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", ts, dur, 0, 7,
                     device=0, stream=7, bytes=4096, **{"memory bandwidth (GB/s)": 0.2}))
    return ev


def rank_doc(rank: int, world: int = 2) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85051572224}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": rank_events(rank),
        "traceName": "hand-written",
    }


def write_ranks(folder: Path, *, gz: bool = False) -> list[Path]:
    """The two rank files in `folder` (named so the file name also says the rank)."""
    paths = []
    for r in (0, 1):
        data = json.dumps(rank_doc(r)).encode()
        p = folder / (f"worker_rank{r}.pt.trace.json" + (".gz" if gz else ""))
        p.write_bytes(gzip.compress(data) if gz else data)
        paths.append(p)
    return paths
