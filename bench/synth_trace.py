"""A realistic synthetic Trn3 trace of any size, for benchmarks (written with TraceWriter).

Not a simulation: a vectorised generator shaped like one. Layers of kernels
(qkv/o/mlp matmuls, flash attention, rmsnorm, activation) run on every core of
every chip; each kernel keeps each engine busy a kernel-specific fraction of its
time with opcode mixes per kernel kind (MultiplyMoving on TensorMatrix,
LoadStationary on Tensor, Exponential/TensorTensor on Vector, ...), lognormal
instruction durations and random gaps. DMA queues stream HBM<->SBUF transfers,
each layer ends with an all-reduce across chips (the slowest chip makes the others
wait), and counters (HBM read/write, SBUF, PSUM, throttling, link) are sampled
every microsecond or so from the same events. Every array is built with numpy: ten
million instructions take seconds, not minutes.

    python bench/synth_trace.py OUT.trnx --instructions 10000000
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

from simcore.trace import TraceWriter

ENGINES = [  # (kind, name, mean instruction ns)
    ("tensor", "Tensor", 55.0),
    ("tensor_matrix", "TensorMatrix", 120.0),
    ("vector", "Vector", 160.0),
    ("scalar", "Scalar", 180.0),
    ("gpsimd", "GpSimd", 240.0),
    ("sync", "Sync", 35.0),
]
DMA_BYTES_PER_NS = 110.0  # one queue's transfer rate (GB/s)
DMA_QUEUES = ["qSyncIO0", "qSyncIO1", "qVectorSpillReload0", "qScalarIO0"]
KERNEL_KINDS = [  # name, op kind, length weight, per-engine busy fraction, dtype
    ("matmul_qkv", "matmul", 3.0, [0.55, 0.88, 0.25, 0.10, 0.05, 0.30], "bf16"),
    ("flash_attention", "attention", 4.0, [0.35, 0.60, 0.70, 0.45, 0.15, 0.35], "bf16"),
    ("matmul_o_proj", "matmul", 1.5, [0.55, 0.85, 0.20, 0.10, 0.05, 0.30], "bf16"),
    ("rmsnorm", "rmsnorm", 0.6, [0.05, 0.05, 0.75, 0.55, 0.30, 0.25], "bf16"),
    ("matmul_gate_up", "matmul", 5.0, [0.50, 0.90, 0.20, 0.05, 0.05, 0.30], "mxfp8"),
    ("silu_mul", "activation", 0.8, [0.02, 0.02, 0.65, 0.80, 0.20, 0.20], "bf16"),
    ("matmul_down", "matmul", 2.5, [0.50, 0.88, 0.20, 0.05, 0.05, 0.30], "mxfp8"),
]
OPCODES = {  # engine name -> (opcodes, probabilities per kernel kind index or one list)
    "Tensor": (["LoadStationary"], None),
    "TensorMatrix": (["MultiplyMoving", "Transpose"], [0.93, 0.07]),
    "Vector": (["TensorTensor", "Exponential", "TensorReduce", "TensorScalarPtr", "QuantizeMX"], None),
    "Scalar": (["Activation", "Exp", "Copy"], [0.6, 0.25, 0.15]),
    "GpSimd": (["Iota", "AffineSelect", "TensorCopy"], [0.3, 0.3, 0.4]),
    "Sync": (["SemaphoreWait", "DmaTrigger"], [0.5, 0.5]),
}
VECTOR_MIX = {  # per op kind
    "matmul": [0.5, 0.0, 0.1, 0.3, 0.1],
    "attention": [0.25, 0.45, 0.2, 0.1, 0.0],
    "rmsnorm": [0.3, 0.0, 0.5, 0.2, 0.0],
    "activation": [0.6, 0.0, 0.1, 0.3, 0.0],
}

HARDWARE = {
    "name": "trn3",
    "chips": 2,
    "cores_per_chip": 8,
    "tensor": {"rows": 128, "cols": 128, "clock_ghz": 2.4,
               "peak_tflops": {"bf16": 79.0, "fp8": 158.0, "mxfp8": 315.0, "mxfp4": 315.0, "fp32": 20.0},
               "bf16_flop_weight": {"bf16": 1.0, "fp8": 0.5, "mxfp8": 0.25, "mxfp4": 0.25, "fp32": 1.0}},
    "hbm": {"capacity_bytes": 144 * 2**30, "bandwidth_gbps": 4900.0},
    "link": {"bandwidth_gbps": 2560.0},
    "sbuf": {"bytes_per_core": 32 * 2**20, "partitions": 128},
    "psum": {"bytes_per_core": 2 * 2**20, "partitions": 128},
}


def _segment_cumsum(values: np.ndarray, seg_start: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum restarting at each segment (seg_start: first index of each)."""
    c = np.cumsum(values)
    excl = c - values
    base = np.repeat(excl[seg_start], np.diff(np.r_[seg_start, len(values)]))
    return excl - base


def write_synthetic_trace(path: Path, n_instructions: int = 10_000_000, *, chips: int = 2, cores: int = 8,
                          layers: int = 24, seed: int = 7, overwrite: bool = True) -> Path:
    rng = np.random.default_rng(seed)
    path = Path(path)
    if path.exists() and overwrite:
        shutil.rmtree(path)
    n_cores = chips * cores
    per_row = n_instructions / (n_cores * len(ENGINES))
    kinds = KERNEL_KINDS
    n_k = layers * len(kinds)
    # kernel lengths: sized so the busiest engine gets its share of instructions
    weights = np.array([k[2] for k in kinds] * layers)
    mean_ns = np.array([e[2] for e in ENGINES])
    busy = np.array([k[3] for k in kinds] * layers)  # (n_k, engines)
    # instructions of engine e in kernel k ~ busy[k,e] * len_k / mean_e; total per engine = per_row
    scale = per_row / ((busy * weights[:, None]).sum(0) / mean_ns).mean()
    length = weights * scale  # ns per kernel (same on every core up to jitter)

    # -- tracks ---------------------------------------------------------------------
    track_rows = []  # (chip, core, kind, name, unit)
    engine_track = {}
    kernel_track, dma_track, cc_track, counter_track = {}, {}, {}, {}
    for c in range(chips):
        cc_track[c] = len(track_rows)
        track_rows.append((c, -1, "cc", "CC", ""))
        for name, unit in (("HBM Read Bandwidth", "GB/s"), ("HBM Write Bandwidth", "GB/s"), ("Link Bandwidth", "GB/s")):
            counter_track[(c, -1, name)] = len(track_rows)
            track_rows.append((c, -1, "counter", name, unit))
        for k in range(cores):
            kernel_track[(c, k)] = len(track_rows)
            track_rows.append((c, k, "kernel", "Kernels", ""))
            for kind, name, _ in ENGINES:
                engine_track[(c, k, name)] = len(track_rows)
                track_rows.append((c, k, kind, name, ""))
            for q in DMA_QUEUES:
                dma_track[(c, k, q)] = len(track_rows)
                track_rows.append((c, k, "dma_queue", q, ""))
            for name, unit in (("State Buffer Usage", "bytes"), ("PSUM Usage", "bytes"), ("Throttling", "%")):
                counter_track[(c, k, name)] = len(track_rows)
                track_rows.append((c, k, "counter", name, unit))

    # -- kernel schedule: per chip, layers separated by an all-reduce ----------------
    gap = 400.0
    kstart = np.zeros((chips, cores, n_k))
    kdur = np.zeros((chips, cores, n_k))
    coll_rows = []
    chip_time = np.zeros(chips)
    slow = 1.0 + 0.06 * rng.random(chips)  # per-chip speed
    for layer in range(layers):
        sl = slice(layer * len(kinds), (layer + 1) * len(kinds))
        arrive = np.zeros(chips)
        for c in range(chips):
            jitter = 1.0 + 0.04 * rng.standard_normal((cores, len(kinds)))
            straggle = 1.25 if rng.random() < 0.15 else 1.0
            d = length[sl][None, :] * slow[c] * np.clip(jitter, 0.85, 1.2) * straggle
            s = chip_time[c] + np.cumsum(np.c_[np.zeros(cores), d[:, :-1] + gap], axis=1)
            kstart[c, :, sl], kdur[c, :, sl] = s, d
            arrive[c] = (s[:, -1] + d[:, -1]).max() + gap
        start = arrive.max()
        if chips == 1:  # nothing to all-reduce with
            chip_time[0] = start
            continue
        # the all-reduce takes ~10% of a layer: its size follows the layer's compute
        xfer = 0.10 * length[sl].sum() + 8000.0
        msg = int((xfer - 8000.0) * 180.0 / (2 * (chips - 1) / chips))  # ~180 GB/s algorithm bandwidth
        for c in range(chips):
            coll_rows.append((layer, cc_track[c], c, c, int(arrive[c]), int(start), int(start + xfer), msg))
            chip_time[c] = start + xfer + gap
    kstart, kdur = np.floor(kstart).astype(np.int64), np.floor(kdur).astype(np.int64)

    meta = {
        "hardware": HARDWARE,
        "workload": {"name": "synthetic-llm", "kind": "model", "phase": "prefill", "dtype": "bf16",
                     "layers": layers, "instructions": n_instructions, "seed": seed},
        "simulator": {"name": "bench/synth_trace.py", "version": "1", "seed": seed},
        "capture": {"detail": "instruction", "synthetic": True},
    }
    with TraceWriter(path, meta, overwrite=True) as w:
        arr = list(zip(*track_rows))
        w.write("tracks", {
            "track_id": np.arange(len(track_rows), dtype=np.int32), "chip": np.array(arr[0], np.int32),
            "core": np.array(arr[1], np.int32), "kind": list(arr[2]), "name": list(arr[3]), "unit": list(arr[4]),
        })
        # ops: model -> layers -> ops; kernels point at ops
        op_names = ["synthetic-llm"] + [f"layer {i}" for i in range(layers)]
        op_level = ["model"] + ["layer"] * layers
        op_kind = ["model"] + ["layer"] * layers
        op_parent = [-1] + [0] * layers
        op_of = np.zeros(n_k, dtype=np.int64)
        for layer in range(layers):
            for j, k in enumerate(kinds):
                op_of[layer * len(kinds) + j] = len(op_names)
                op_names.append(f"layers.{layer}.{k[0]}")
                op_level.append("op")
                op_kind.append(k[1])
                op_parent.append(1 + layer)
        n_ops = len(op_names)
        ks_all, ke_all = kstart.reshape(-1, n_k), (kstart + kdur).reshape(-1, n_k)
        op_start = np.full(n_ops, np.iinfo(np.int64).max)
        op_end = np.zeros(n_ops, dtype=np.int64)
        np.minimum.at(op_start, op_of, ks_all.min(0))
        np.maximum.at(op_end, op_of, ke_all.max(0))
        for layer in range(layers):
            sl = op_of[layer * len(kinds):(layer + 1) * len(kinds)]
            op_start[1 + layer], op_end[1 + layer] = op_start[sl].min(), op_end[sl].max()
        op_start[0], op_end[0] = op_start[1:layers + 1].min(), op_end[1:layers + 1].max()
        w.write("ops", {"op_id": np.arange(n_ops, dtype=np.int64), "parent_id": np.array(op_parent, np.int64),
                        "level": op_level, "name": op_names, "kind": op_kind,
                        "start_ns": op_start, "dur_ns": op_end - op_start})

        kernel_rows = {"kernel_id": [], "track_id": [], "chip": [], "core": [], "op_id": [], "name": [],
                       "start_ns": [], "dur_ns": [], "flops": [], "model_flops": [], "hbm_read_bytes": [],
                       "hbm_write_bytes": [], "dtype": []}
        next_id = 0
        dma_parts, flows_src, flows_dst = [], [], []
        hbm_read = {c: [] for c in range(chips)}
        for c in range(chips):
            for k in range(cores):
                core_idx = c * cores + k
                kid = core_idx * n_k + np.arange(n_k, dtype=np.int64)
                rows_in_kernel = {}
                tm_start = None
                for e, (kind, name, m) in enumerate(ENGINES):
                    counts = rng.poisson(busy[:, e] * kdur[c, k] / m).astype(np.int64) + 1
                    n = int(counts.sum())
                    seg = np.r_[0, np.cumsum(counts)[:-1]]
                    kernel_of = np.repeat(np.arange(n_k), counts)
                    d = rng.lognormal(np.log(m), 0.35, n)
                    g = rng.exponential(1.0, n)
                    # normalise per kernel: busy share of the kernel length, the rest is gaps
                    dsum = np.bincount(kernel_of, d, minlength=n_k)
                    gsum = np.bincount(kernel_of, g, minlength=n_k)
                    target_busy = np.minimum(busy[:, e] * kdur[c, k], counts * m * 1.6)
                    d *= (target_busy / dsum)[kernel_of]
                    g *= ((kdur[c, k] - target_busy) / gsum)[kernel_of]
                    offs = _segment_cumsum(d + g, seg) + g
                    t_start = np.floor(kstart[c, k][kernel_of] + offs).astype(np.int64)
                    t_end = np.floor(kstart[c, k][kernel_of] + offs + d).astype(np.int64)
                    t_end = np.minimum(t_end, np.r_[t_start[1:], t_end[-1]])
                    t_start = np.minimum(t_start, t_end)
                    ops, probs = OPCODES[name]
                    if name == "Vector":
                        table = np.array([VECTOR_MIX[kinds[i % len(kinds)][1]] for i in range(n_k)])
                        cum = np.cumsum(table, axis=1)[kernel_of]
                        code = (rng.random(n)[:, None] > cum).sum(1)
                    elif probs is None:
                        code = np.zeros(n, dtype=np.int64)
                    else:
                        code = np.searchsorted(np.cumsum(probs), rng.random(n))
                    code = np.minimum(code, len(ops) - 1).astype(np.int32)
                    dtype_code = np.array([0 if kinds[i % len(kinds)][4] == "bf16" else 1 for i in range(n_k)], np.int32)[kernel_of]
                    dur = t_end - t_start
                    flops = np.where(name == "TensorMatrix", dur * 2 * 128 * 128 * 2.4 * 0.9, dur * 128 * 1.2).astype(np.int64)
                    ids = next_id + np.arange(n, dtype=np.int64)
                    next_id += n
                    w.write("instructions", {
                        "id": ids, "track_id": np.full(n, engine_track[(c, k, name)], np.int32),
                        "start_ns": t_start, "dur_ns": dur, "opcode": (code, ops),
                        "kernel_id": kid[kernel_of], "flops": flops, "bytes": (dur * 64).astype(np.int64),
                        "dtype": (dtype_code, ["bf16", "mxfp8"]),
                    })
                    rows_in_kernel[name] = np.bincount(kernel_of, minlength=n_k)
                    if name == "TensorMatrix":
                        tm_start, tm_ids = t_start, ids
                # DMA: each queue streams transfers through the kernels
                for qi, q in enumerate(DMA_QUEUES):
                    share = 0.45 if qi < 2 else 0.15
                    mean_d = 2**14 * 63 / 6 / DMA_BYTES_PER_NS + 60.0
                    counts = rng.poisson(kdur[c, k] * share / mean_d).astype(np.int64) + 1
                    n = int(counts.sum())
                    seg = np.r_[0, np.cumsum(counts)[:-1]]
                    kernel_of = np.repeat(np.arange(n_k), counts)
                    nbytes = (2 ** rng.integers(14, 20, n)).astype(np.int64)
                    d = nbytes / DMA_BYTES_PER_NS + 60.0
                    g = rng.exponential(1.0, n)
                    dsum = np.bincount(kernel_of, d, minlength=n_k)
                    gsum = np.bincount(kernel_of, g, minlength=n_k)
                    fit = np.minimum(1.0, 0.9 * kdur[c, k] / dsum)
                    d *= fit[kernel_of]
                    g *= (np.maximum(kdur[c, k] - dsum * fit, 0) / gsum)[kernel_of]
                    offs = _segment_cumsum(d + g, seg) + g
                    t_start = np.floor(kstart[c, k][kernel_of] + offs).astype(np.int64)
                    t_end = np.floor(kstart[c, k][kernel_of] + offs + d).astype(np.int64)
                    t_end = np.minimum(t_end, np.r_[t_start[1:], t_end[-1]])
                    t_start = np.minimum(t_start, t_end)
                    # bytes follow the final duration: every queue runs at a plausible rate
                    nbytes = np.maximum((t_end - t_start - 60) * DMA_BYTES_PER_NS * rng.uniform(0.6, 1.0, n), 512).astype(np.int64)
                    to_sbuf = rng.random(n) < 0.7
                    ids = next_id + np.arange(n, dtype=np.int64)
                    next_id += n
                    dma_parts.append({
                        "id": ids, "track_id": np.full(n, dma_track[(c, k, q)], np.int32), "start_ns": t_start,
                        "dur_ns": t_end - t_start, "bytes": nbytes, "partitions": np.full(n, 128, np.int32),
                        "src": (np.where(to_sbuf, 0, 1).astype(np.int32), ["hbm", "sbuf"]),
                        "dst": (np.where(to_sbuf, 1, 0).astype(np.int32), ["hbm", "sbuf"]),
                        "kernel_id": kid[kernel_of],
                    })
                    hbm_read[c].append((t_start, t_end, nbytes, to_sbuf))
                    # semaphore: the first matmul starting after a load finishes waits for it
                    if tm_start is not None and qi == 0:
                        j = np.searchsorted(tm_start, t_end[to_sbuf])
                        ok = j < len(tm_start)
                        flows_src.append(ids[to_sbuf][ok])
                        flows_dst.append(tm_ids[j[ok]])
                kernel_rows["kernel_id"].append(kid)
                kernel_rows["track_id"].append(np.full(n_k, kernel_track[(c, k)], np.int32))
                kernel_rows["chip"].append(np.full(n_k, c, np.int32))
                kernel_rows["core"].append(np.full(n_k, k, np.int32))
                kernel_rows["op_id"].append(op_of)
                kernel_rows["name"].append([kinds[i % len(kinds)][0] for i in range(n_k)])
                kernel_rows["start_ns"].append(kstart[c, k])
                kernel_rows["dur_ns"].append(kdur[c, k])
                fl = (kdur[c, k] * 2 * 128 * 128 * 2.4 * busy[:, 1] * 0.9).astype(np.int64)
                kernel_rows["flops"].append(fl)
                kernel_rows["model_flops"].append((fl * 0.95).astype(np.int64))
                kernel_rows["hbm_read_bytes"].append((kdur[c, k] * 0.9 * 0.7 * DMA_BYTES_PER_NS).astype(np.int64))
                kernel_rows["hbm_write_bytes"].append((kdur[c, k] * 0.9 * 0.3 * DMA_BYTES_PER_NS).astype(np.int64))
                kernel_rows["dtype"].append([kinds[i % len(kinds)][4] for i in range(n_k)])
        for part in dma_parts:
            w.write("dma", part)
        w.write("kernels", {k: (np.concatenate(v) if k not in ("name", "dtype") else sum(v, [])) for k, v in kernel_rows.items()})
        cr = np.array(coll_rows, dtype=np.int64).reshape(-1, 8)
        order = np.lexsort((cr[:, 4], cr[:, 1]))
        cr = cr[order]
        xfer_ns = (cr[:, 6] - cr[:, 5]).astype(np.float64)
        algo = cr[:, 7] / np.maximum(xfer_ns, 1)
        w.write("collectives", {
            "collective_id": cr[:, 0], "track_id": cr[:, 1].astype(np.int32), "chip": cr[:, 2].astype(np.int32),
            "rank": cr[:, 3].astype(np.int32), "group_size": np.full(len(cr), chips, np.int32),
            "kind": "all_reduce", "algorithm": "ring", "op_id": np.full(len(cr), -1, np.int64), "bytes": cr[:, 7],
            "arrive_ns": cr[:, 4], "start_ns": cr[:, 5], "end_ns": cr[:, 6], "wait_ns": cr[:, 5] - cr[:, 4],
            "algo_bw_gbps": algo, "bus_bw_gbps": algo * 2 * (chips - 1) / chips,
        })
        # counters: one sample per microsecond (coarser on long traces: ~20k samples per counter)
        end = int(max(chip_time.max(), (kstart + kdur).max()))
        step = int(max(1000, end // 20000 // 1000 * 1000))
        times = np.arange(0, end + step, step, dtype=np.int64)
        nb = len(times)
        for c in range(chips):
            # each transfer moves its bytes evenly over its duration: add its rate
            # (bytes/ns = GB/s) while it runs, via a difference array over samples
            rd = np.zeros(nb + 1)
            wr = np.zeros(nb + 1)
            for s, e, b, to_sbuf in hbm_read[c]:
                rate = b / np.maximum(e - s, 1)
                i0, i1 = np.minimum(s // step, nb), np.minimum(e // step + 1, nb)
                for acc, m in ((rd, to_sbuf), (wr, ~to_sbuf)):
                    acc += np.bincount(i0[m], rate[m], minlength=nb + 1) - np.bincount(i1[m], rate[m], minlength=nb + 1)
            rd, wr = np.cumsum(rd)[:nb], np.cumsum(wr)[:nb]
            link = np.zeros(nb)
            for row in cr[cr[:, 2] == c]:
                link[row[5] // step: row[6] // step + 1] = row[7] * 2 * (chips - 1) / chips / max(row[6] - row[5], 1)
            for name, vals in (("HBM Read Bandwidth", rd), ("HBM Write Bandwidth", wr), ("Link Bandwidth", link)):
                w.write("counters", {"track_id": np.full(nb, counter_track[(c, -1, name)], np.int32), "time_ns": times, "value": vals})
            for k in range(cores):
                walk = np.clip(np.cumsum(rng.normal(0, 0.02, nb)) % 1.0, 0, 1)
                w.write("counters", {"track_id": np.full(nb, counter_track[(c, k, "State Buffer Usage")], np.int32),
                                     "time_ns": times, "value": (0.3 + 0.6 * walk) * 32 * 2**20})
                w.write("counters", {"track_id": np.full(nb, counter_track[(c, k, "PSUM Usage")], np.int32),
                                     "time_ns": times, "value": rng.integers(2, 9, nb) / 8 * 2 * 2**20})
                thr = np.full(nb, 100.0)
                for ks in kstart[c, k][1::len(kinds)]:  # ramp after idle gaps before qkv matmuls
                    i = ks // step
                    thr[i:i + 4] = [50.0, 66.0, 83.0, 100.0][: len(thr[i:i + 4])]
                w.write("counters", {"track_id": np.full(nb, counter_track[(c, k, "Throttling")], np.int32),
                                     "time_ns": times, "value": thr})
        if flows_src:
            src, dst = np.concatenate(flows_src), np.concatenate(flows_dst)
            w.write("flows", {"src_id": src, "dst_id": dst, "kind": "semaphore"})
    return path


def cached_synthetic_trace(n_instructions: int = 10_000_000) -> Path:
    """The synthetic trace of this size from the bench cache, written on first use.

    Several benches time the same 10M-row trace; generating it takes a minute, so it
    is kept under $TRN3_BENCH_CACHE (default /tmp/trn3-bench) between runs.
    """
    cache = Path(os.environ.get("TRN3_BENCH_CACHE", "/tmp/trn3-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    trace = cache / f"synthetic-{n_instructions}.trnx"
    if not trace.exists():
        t = time.perf_counter()
        write_synthetic_trace(trace, n_instructions)
        print(f"generated {trace} in {time.perf_counter() - t:.1f} s", flush=True)
    return trace


def disk_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--instructions", type=int, default=10_000_000)
    ap.add_argument("--chips", type=int, default=2)
    ap.add_argument("--cores", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    t = time.perf_counter()
    write_synthetic_trace(a.out, a.instructions, chips=a.chips, cores=a.cores, seed=a.seed)
    print(f"wrote {a.out} ({disk_size(a.out) / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
