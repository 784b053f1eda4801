"""PyTorch-profiler (Kineto) traces synthesised in the shape each device kind writes.

What distinguishes the kinds (as PyTorch's profiler and Holistic Trace Analysis name them):
- CUDA: device events `kernel`, `gpu_memcpy` ("Memcpy HtoD (Pageable -> Device)"), `gpu_memset`
  ("Memset (Device)") and `cuda_sync` ("Stream Sync", "Event Sync") on pid = device, tid = stream,
  with `args.device/stream/correlation`; launches are `cuda_runtime` (`cudaLaunchKernel`,
  `cudaMemcpyAsync`, `cudaMemsetAsync`, `cudaStreamSynchronize`) sharing the correlation id;
  NCCL kernels `ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` on their own stream with the
  collective's args; `ac2g` flows; an `Event Sync` (`cudaEventSynchronize`) on stream -1; and
  `gpu_user_annotation` copies of each ProfilerStep, one per stream that ran its kernels, from
  the first kernel's start to the last one's end, 1 ns earlier and 2 ns longer, with only
  `External id` in args (Kineto's `createUserGpuSpan` and `handleActivity`).
- ROCm/HIP: the same categories from roctracer, HIP names (`hipLaunchKernel`,
  `hipExtModuleLaunchKernel`, `hipMemcpyAsync`), hipBLASLt kernels (`Cijk_...`), RCCL kernels
  (named `ncclDevKernel_...` as in NCCL), small stream numbers starting at 0.
- MTIA: device activity as `mtia_ccp_events` (`dma...` events move memory), launches as
  `mtia_runtime` (`runFunction - job_prep_and_submit_for_execution`), no cuda_* categories.
- CPU-only: `cpu_op`/`user_annotation` only (recorded with torch.profiler elsewhere).
Timestamps are microseconds with nanosecond fractions, as recent PyTorch writes them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

KINDS = ("cuda", "rocm", "mtia")
_COMPUTE = {
    "cuda": ["void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)",
             "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, Functor, Array)",
             "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, const float*, int)",
             "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn"],
    "rocm": ["Cijk_Alik_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_GRVW8",
             "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, Functor, Array)",
             "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(ReduceOp)",
             "Cijk_Ailk_Bljk_HHS_BH_MT64x64x64_MI16x16x16x1_SN_GRVW4"],
    "mtia": ["aten::addmm_fused_kernel_0", "aten::gelu_kernel_1", "aten::softmax_kernel_2", "fused_linear_relu_3"],
}
_LAUNCH = {"cuda": "cudaLaunchKernel", "rocm": "hipLaunchKernel", "mtia": "runFunction - job_prep_and_submit_for_execution"}
_RUNTIME = {"cuda": "cuda_runtime", "rocm": "cuda_runtime", "mtia": "mtia_runtime"}
_DEVICE_CAT = {"cuda": "kernel", "rocm": "kernel", "mtia": "mtia_ccp_events"}


_INTEGER_US = [False]


def _ts(t: float) -> float:
    return float(round(t)) if _INTEGER_US[0] else round(t, 3)


def rank_trace(kind: str, rank: int, world: int, *, steps: int = 4, seed: int = 0, t0: float = 1_733_000_000_000_000.0,
               gpu_annotations: bool = True, integer_us: bool = False) -> dict[str, Any]:
    """One rank's trace (a dict to dump as JSON); `integer_us` writes whole microseconds (older PyTorch)."""
    _INTEGER_US[0] = integer_us
    rnd = random.Random(seed * 1000 + rank * 17 + KINDS.index(kind))
    ev: list[dict[str, Any]] = []
    cpu_pid = 4000 + rank
    dev = 0 if kind != "rocm" else 2  # ROCm device ids as the runtime numbers them
    compute_stream = {"cuda": 7, "rocm": 0, "mtia": 1}[kind]
    copy_stream = {"cuda": 13, "rocm": 1, "mtia": 2}[kind]
    comm_stream = {"cuda": 21, "rocm": 3, "mtia": 3}[kind]
    corr = 1000 * (rank + 1)
    ext = 500 * (rank + 1)
    t = t0 + rnd.uniform(0, 30)
    dev_free = {compute_stream: t, copy_stream: t, comm_stream: t}

    spans: dict[int, list[float]] = {}  # the current step's kernels per stream: [first start, last end]

    def device(cat: str, name: str, stream: int, start: float, dur: float, c: int, e: int, extra: dict | None = None) -> float:
        args = {"External id": e, "device": dev, "stream": stream, "correlation": c, **(extra or {})}
        if kind != "mtia":
            args["context"] = 1
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": dev, "tid": stream, "ts": _ts(start), "dur": _ts(dur), "args": args})
        ev.append({"ph": "f", "id": c, "pid": dev, "tid": stream, "ts": _ts(start), "cat": "ac2g", "name": "ac2g", "bp": "e"})
        span = spans.setdefault(stream, [start, start + dur])
        span[0], span[1] = min(span[0], start), max(span[1], start + dur)
        return start + dur

    for step in range(steps):
        step_start = t
        spans.clear()
        ops_t = t + 2.0
        for i in range(rnd.randint(4, 7)):
            ext += 1
            op_dur = rnd.uniform(8, 25)
            name = rnd.choice(["aten::mm", "aten::gelu", "aten::softmax", "aten::add"])
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t), "dur": _ts(op_dur),
                       "args": {"External id": ext, "Record function id": 0, "Sequence number": ext}})
            corr += 1
            lt = ops_t + op_dur * 0.4
            launch_args = {"External id": ext, "correlation": corr, "cbid": 211}
            if kind == "rocm":  # roctracer writes the launch's stream as a pointer string
                launch_args["stream"] = "0x55d3c0a1b2c0"
            ev.append({"ph": "X", "cat": _RUNTIME[kind], "name": _LAUNCH[kind], "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(lt),
                       "dur": _ts(3.1), "args": launch_args})
            ev.append({"ph": "s", "id": corr, "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(lt), "cat": "ac2g", "name": "ac2g"})
            start = max(lt + rnd.uniform(4, 9), dev_free[compute_stream] + rnd.uniform(0.0, 6.0))
            dur = rnd.uniform(3, 60) + rnd.random() / 1000
            dev_free[compute_stream] = device(_DEVICE_CAT[kind], rnd.choice(_COMPUTE[kind]), compute_stream, start, dur, corr, ext,
                                              {"grid": [128, 1, 1], "block": [256, 1, 1]} if kind != "mtia" else None)
            ops_t += op_dur + rnd.uniform(0.5, 4)
            if i == 1:  # a copy on its own stream, overlapping compute
                corr += 1
                copy_rt = {"cuda": "cudaMemcpyAsync", "rocm": "hipMemcpyAsync", "mtia": _LAUNCH["mtia"]}[kind]
                ev.append({"ph": "X", "cat": _RUNTIME[kind], "name": copy_rt, "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t),
                           "dur": _ts(2.0), "args": {"External id": ext, "correlation": corr}})
                cs = max(ops_t + 5, dev_free[copy_stream])
                cname = {"cuda": "Memcpy HtoD (Pinned -> Device)", "rocm": "Memcpy HtoD (Host -> Device)", "mtia": "dma_host_to_device"}[kind]
                ccat = {"cuda": "gpu_memcpy", "rocm": "gpu_memcpy", "mtia": "mtia_ccp_events"}[kind]
                dev_free[copy_stream] = device(ccat, cname, copy_stream, cs, rnd.uniform(5, 40), corr, ext, {"bytes": 1 << 20})
            if i == 2 and kind != "mtia":  # a memset on the compute stream
                corr += 1
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync" if kind == "cuda" else "hipMemsetAsync",
                           "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t), "dur": _ts(1.5), "args": {"External id": ext, "correlation": corr}})
                ms = max(ops_t + 3, dev_free[compute_stream])
                dev_free[compute_stream] = device("gpu_memset", "Memset (Device)", compute_stream, ms, rnd.uniform(1, 4), corr, ext, {"bytes": 4096})
        if world > 1:  # an all-reduce, overlapping the step's last kernels on its own stream
            ext += 1
            corr += 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t),
                       "dur": _ts(6.0), "args": {"External id": ext, "Collective name": "allreduce", "In msg nelems": 1 << 20,
                                                  "Out msg nelems": 1 << 20, "dtype": "Float", "Group size": world,
                                                  "Process Group Name": "0", "Process Group Ranks": str(list(range(world)))}})
            ev.append({"ph": "X", "cat": _RUNTIME[kind], "name": _LAUNCH[kind], "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t + 1),
                       "dur": _ts(3.0), "args": {"External id": ext, "correlation": corr}})
            cs = max(ops_t + 6 + rank * rnd.uniform(0, 20), dev_free[comm_stream], dev_free[compute_stream] - rnd.uniform(5, 30))
            dev_free[comm_stream] = device(_DEVICE_CAT[kind], "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                                           comm_stream, cs, rnd.uniform(20, 90), corr, ext,
                                           {"Collective name": "allreduce", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20,
                                            "dtype": "Float", "Group size": world, "Process Group Name": "0"})
            ops_t += 8
        if kind != "mtia":  # the step ends with a stream synchronisation
            corr += 1
            sync_at = max(dev_free.values())
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize" if kind == "cuda" else "hipStreamSynchronize",
                       "pid": cpu_pid, "tid": cpu_pid, "ts": _ts(ops_t), "dur": _ts(max(sync_at - ops_t, 1) + 1), "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": dev, "tid": compute_stream, "ts": _ts(max(ops_t, dev_free[compute_stream] - 3)),
                       "dur": _ts(abs(sync_at - max(ops_t, dev_free[compute_stream] - 3)) + 0.5),
                       "args": {"cuda_sync_kind": "stream_sync", "stream": compute_stream, "correlation": corr, "device": dev}})
            ops_t = max(ops_t, sync_at) + 2
        if kind == "cuda" and step % 2 == 1:  # an event synchronisation: device-wide, on stream -1
            corr += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaEventSynchronize", "pid": cpu_pid, "tid": cpu_pid,
                       "ts": _ts(ops_t), "dur": _ts(4.0), "args": {"correlation": corr, "cbid": 126}})
            ev.append({"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": dev, "tid": 1, "ts": _ts(ops_t + 0.5),
                       "dur": _ts(3.0), "args": {"cuda_sync_kind": "event_sync", "stream": -1, "correlation": corr,
                                                  "device": dev, "context": 1}})
            ops_t += 5
        step_end = max(ops_t, max(dev_free.values())) + rnd.uniform(1, 5)
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": cpu_pid, "tid": cpu_pid,
                   "ts": _ts(step_start), "dur": _ts(step_end - step_start), "args": {"External id": 10 + step}})
        if gpu_annotations:  # as Kineto writes them: per stream, 1 ns (old PyTorch: 1 us) earlier and longer
            nudge = 1.0 if integer_us else 0.001
            for stream, (first, last) in sorted(spans.items()):
                ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{step}", "pid": dev, "tid": stream,
                           "ts": _ts(first - nudge), "dur": _ts(last - first + (nudge if integer_us else 2 * nudge)),
                           "args": {"External id": 10 + step}})
        t = step_end + rnd.uniform(2, 10)
    ev.append({"ph": "M", "name": "process_name", "pid": cpu_pid, "tid": 0, "args": {"name": "python"}})
    ev.append({"ph": "M", "name": "process_name", "pid": dev, "tid": 0, "args": {"name": f"{kind.upper()} {dev}"}})
    props = {"cuda": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000, "computeMajor": 9}],
             "rocm": [{"id": 2, "name": "AMD Instinct MI250X", "totalGlobalMem": 68_702_699_520}],
             "mtia": []}[kind]
    doc = {"schemaVersion": 1, "deviceProperties": props, "traceEvents": ev, "traceName": f"{kind}-rank{rank}",
           "baseTimeNanoseconds": 1_733_000_000_000_000_000}
    if world > 1:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    return doc


def write_case(directory: Path, kind: str, world: int, seed: int = 0, steps: int = 4, gpu_annotations: bool = True,
               integer_us: bool = False) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(world):
        p = directory / f"{kind}_rank{r}.pt.trace.json"
        p.write_text(json.dumps(rank_trace(kind, r, world, seed=seed, steps=steps, gpu_annotations=gpu_annotations,
                                           integer_us=integer_us)))
        paths.append(p)
    return paths
