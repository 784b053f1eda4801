"""Kineto import throughput: `trnx import` beside a plain json.load + pandas pipeline, same files, same run.

Generates synthetic two-rank PyTorch-profiler traces shaped like real ones (ProfilerStep
annotations, nested aten ops, cudaLaunchKernel runtime events, python_function events
- usually the bulk of a file -, GEMM/elementwise kernels, NCCL all-reduces with
record_param_comms args, memcpys and ac2g flow events), then times:

  ours      import_kineto(): the compiled byte scanner (explorer/interop/kineto/scan.py:
            one pass over the bytes into arrays, no Python object per event), columns per
            rank, cross-rank collective matching, the ops hierarchy, and writing + closing
            the trnx trace; in this process after a first (loading) run, as a library
            caller sees it;
  msgspec   the same import with the scanner switched off: msgspec's typed decode, the
            path files the scanner refuses take;
  baseline  json.load + pandas.DataFrame(traceEvents) + drop python_function + args
            expanded to columns + ts/dur to int ns + sort per stream: a frame of the
            events, no collectives, no hierarchy, nothing written.
  cold      each pipeline in a fresh interpreter, imports included, as a user runs it:
            `python -m explorer.cli.main import ...` (which also prints the temporal
            breakdown) against `python -c '<imports>; baseline(...)'`.

    .venv/bin/python bench/kineto_import.py --events 300000 --repeat 3
"""

from __future__ import annotations

import argparse
import inspect
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from explorer.interop import import_kineto
from explorer.interop.kineto import importer as KI

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
KERNELS = ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "void at::native::vectorized_elementwise_kernel<4>",
           "void at::native::reduce_kernel<512, 1>", "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>"]
OPS = [("aten::linear", "aten::addmm"), ("aten::gelu", None), ("aten::layer_norm", "aten::native_layer_norm"),
       ("aten::scaled_dot_product_attention", "aten::_flash_attention_forward")]


def synth_rank(rank: int, events: int, seed: int) -> dict:
    """One rank's trace with about `events` events."""
    rng = np.random.default_rng(seed + rank)
    ev: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
    ]
    t_cpu = 1_000.0
    t_gpu = 1_050.0
    ext = 1
    corr = 1
    step = 0
    per_layer = 0
    while len(ev) < events:
        step_start = t_cpu
        step_events_start = len(ev)
        for layer in range(32):
            for op, inner in OPS:
                dur = float(rng.uniform(5, 30))
                ev.append({"ph": "X", "cat": "python_function", "name": f"torch/nn/modules/module.py(1520): _call_impl", "pid": 4242, "tid": 4242,
                           "ts": round(t_cpu - 1, 3), "dur": round(dur + 3, 3), "args": {"Python id": ext, "Python parent id": ext - 1}})
                ev.append({"ph": "X", "cat": "python_function", "name": "torch/nn/functional.py(2512): linear", "pid": 4242, "tid": 4242,
                           "ts": round(t_cpu - 0.5, 3), "dur": round(dur + 1, 3), "args": {"Python id": ext + 1}})
                ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 4242, "tid": 4242, "ts": round(t_cpu, 3), "dur": round(dur, 3),
                           "args": {"External id": ext, "Sequence number": ext, "Fwd thread id": 0, "Record function id": 0, "Ev Idx": len(ev)}})
                launch_ext = ext
                if inner:
                    ext += 1
                    launch_ext = ext
                    ev.append({"ph": "X", "cat": "cpu_op", "name": inner, "pid": 4242, "tid": 4242, "ts": round(t_cpu + 1, 3),
                               "dur": round(dur - 2, 3), "args": {"External id": ext, "Ev Idx": len(ev)}})
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
                           "ts": round(t_cpu + dur - 4, 3), "dur": 3.0, "args": {"External id": launch_ext, "cbid": 211, "correlation": corr}})
                kdur = float(rng.lognormal(3.0, 0.6))
                t_gpu = max(t_gpu, t_cpu + dur) + float(rng.uniform(0, 2))
                ev.append({"ph": "X", "cat": "kernel", "name": KERNELS[int(rng.integers(0, len(KERNELS)))], "pid": 0, "tid": 7,
                           "ts": round(t_gpu, 3), "dur": round(kdur, 3),
                           "args": {"External id": launch_ext, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                                    "registers per thread": 168, "shared memory": 98304, "blocks per SM": 1.5, "warps per SM": 12.0,
                                    "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 19}})
                ev.append({"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": round(t_cpu + dur - 4, 3), "cat": "ac2g", "name": "ac2g"})
                ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": round(t_gpu, 3), "cat": "ac2g", "name": "ac2g", "bp": "e"})
                t_gpu += kdur
                t_cpu += dur + float(rng.uniform(1, 4))
                ext += 1
                corr += 1
            # one all-reduce per layer on the comm stream; rank 1 runs a little late
            ext += 1
            comm_args = {"External id": ext, "Collective name": "allreduce", "In msg nelems": 4194304, "Out msg nelems": 4194304,
                         "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": 4242, "ts": round(t_cpu, 3), "dur": 4.0, "args": comm_args})
            t_cpu += 5.0
            start = t_gpu + (15.0 * rank if layer % 3 == 0 else 0.0)
            ev.append({"ph": "X", "cat": "kernel", "name": NCCL, "pid": 0, "tid": 20, "ts": round(start, 3), "dur": 60.0,
                       "args": {**comm_args, "device": 0, "stream": 20, "correlation": corr}})
            if layer % 8 == 0:
                ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": round(t_gpu, 3),
                           "dur": 12.0, "args": {"device": 0, "stream": 7, "correlation": corr, "bytes": 1 << 20, "memory bandwidth (GB/s)": 87.4}})
                t_gpu += 12.0
            corr += 1
            per_layer += 1
        ev.insert(step_events_start, {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 4242, "tid": 4242,
                                      "ts": round(step_start, 3), "dur": round(t_cpu - step_start, 3), "args": {"External id": ext}})
        ext += 1
        step += 1
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85051572224}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "traceEvents": ev, "traceName": "bench"}


def baseline(paths: list[Path]) -> pd.DataFrame:
    """The plain pipeline: json.load, a DataFrame of all events, args as columns, ns, sorted."""
    frames = []
    for rank, p in enumerate(paths):
        with open(p) as fh:
            doc = json.load(fh)
        df = pd.DataFrame(doc["traceEvents"])
        df = df[(df["ph"] == "X") & (df["cat"] != "python_function")]
        args = pd.DataFrame(df["args"].tolist(), index=df.index)
        df = df.drop(columns=["args"]).join(args)
        df["start_ns"] = (df["ts"] * 1000).round().astype("int64")
        df["dur_ns"] = (df["dur"] * 1000).round().astype("int64")
        df["rank"] = rank
        frames.append(df.sort_values(["cat", "pid", "tid", "start_ns"], kind="stable"))
    return pd.concat(frames, ignore_index=True)


def best(fn, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU time (this process and its finished children) of `repeat` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        c0 = _cpu()
        t = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c0)
    return min(walls), min(cpus)


def _cpu() -> float:
    """CPU seconds of this process and its reaped children: less sensitive to a shared machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=300_000, help="events per rank (2 ranks)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kineto-bench-"))
    try:
        paths = []
        for r in range(2):
            p = work / f"rank{r}.pt.trace.json"
            p.write_bytes(orjson.dumps(synth_rank(r, a.events, a.seed)))
            paths.append(p)
        size = sum(p.stat().st_size for p in paths)
        n_events = a.events * 2
        out = work / "out.trnx"

        def ours() -> None:
            import_kineto(paths, out, overwrite=True)

        def ours_msgspec() -> None:  # the scanner switched off: what files it refuses go through
            scanner, KI.read_scanned = KI.read_scanned, lambda data, include_python: None
            try:
                import_kineto(paths, out, overwrite=True)
            finally:
                KI.read_scanned = scanner

        ours()  # loads numba and the compiled scanner (compiles it, the first time on a machine)
        t_ours = best(ours, a.repeat)
        t_msgspec = best(ours_msgspec, a.repeat)
        t_base = best(lambda: baseline(paths), a.repeat)
        cli = [sys.executable, "-m", "explorer.cli.main", "import", *map(str, paths), "-o", str(out), "--overwrite"]
        base_code = f"from __future__ import annotations\nimport json\nimport pandas as pd\n{inspect.getsource(baseline)}\nbaseline({[str(p) for p in paths]!r})"
        t_cold = best(lambda: subprocess.run(cli, check=True, capture_output=True), a.repeat)
        t_cold_base = best(lambda: subprocess.run([sys.executable, "-c", base_code], check=True, capture_output=True), a.repeat)
        print(f"2 ranks, ~{n_events:,} events, {size / 1e6:.0f} MB of JSON")
        print(f"{'pipeline':<46}{'wall':>8}{'events/s':>12}{'MB/s':>6}{'cpu':>8}")
        for label, (t, c) in (("import, in process (to a trace)", t_ours), ("import without the scanner (msgspec)", t_msgspec),
                              ("json.load + pandas (frame only)", t_base),
                              ("cold: trnx import (+ breakdown), new process", t_cold),
                              ("cold: json.load + pandas, new process", t_cold_base)):
            print(f"{label:<46}{t:>7.2f}s{n_events / t:>12,.0f}{size / 1e6 / t:>6.0f}{c:>7.2f}s")
        print(f"ratio baseline / import: {t_base[0] / t_ours[0]:.2f}x wall, {t_base[1] / t_ours[1]:.2f}x cpu in one process"
              f" (goal >= 3x); {t_base[0] / t_msgspec[0]:.2f}x without the scanner;"
              f" cold processes {t_cold_base[0] / t_cold[0]:.2f}x wall")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
