"""How fast `trnx summary` and `trnx diff` are on a 10-million-instruction trace.

Writes two synthetic traces with `TraceWriter` (A, and B: the same shape with a
different seed and 10% faster matmuls), then times, end to end as a user runs them:

    trnx summary A --json                  (metrics, collectives, recommendations)
    trnx summary A --json --no-recommendations
    trnx diff A B --json

plus the in-process model calls, beside a baseline measured in the same run: plain
pandas reading the same Feather files and grouping durations, counts, FLOPs and
bytes per (chip, core, engine) -- the "same numbers" without overlap-aware unions,
windows, normalisation or recommendations. Goal (issue 6): each command < 5 s.
Each command's peak RSS is printed beside its time (the memory-mapped trace's pages
it touched included).

    .venv/bin/python bench/analysis_speed.py [--instructions 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import trnx_peak  # noqa: E402  (runs `trnx ARGS`, printing its own peak RSS: this process is larger)
from simcore.trace import TraceWriter  # noqa: E402

ENGINES = [("tensor", "Tensor", ["LoadStationary"]), ("tensor_matrix", "TensorMatrix", ["MultiplyMoving", "Transpose"]),
           ("vector", "Vector", ["TensorTensor", "Exponential", "TensorReduce"]), ("scalar", "Scalar", ["Activation", "Copy"]),
           ("gpsimd", "GpSimd", ["Iota", "TensorCopy"]), ("sync", "Sync", ["SemaphoreWait", "DmaTrigger"])]
QUEUES = ["qSyncIO0", "qSyncIO1", "qScalarIO0", "qVectorSpillReload0"]
OPS = [("attention.qkv_proj", "matmul"), ("attention.core", "attention"), ("attention.o_proj", "matmul"),
       ("mlp.gate_up", "matmul"), ("mlp.down", "matmul"), ("all_reduce", "all_reduce")]
HARDWARE = {
    "name": "trn3", "chips": 2, "cores_per_chip": 8,
    "tensor": {"rows": 128, "cols": 128, "clock_ghz": 2.4,
               "peak_tflops": {"bf16": 79, "fp8": 158, "mxfp8": 315, "mxfp4": 315, "fp32": 20},
               "bf16_flop_weight": {"bf16": 1, "fp8": 0.5, "mxfp8": 0.25, "mxfp4": 0.25, "fp32": 4}},
    "hbm": {"capacity_bytes": 144 * 2**30, "bandwidth_gbps": 4900}, "link": {"bandwidth_gbps": 2560},
}


def write_trace(path: Path, n_instructions: int, seed: int, matmul_speed: float = 1.0, chips: int = 2,
                cores: int = 4, layers: int = 32, launches: int = 8) -> Path:
    """A trace shaped like a capture: engines and DMA queues per core, kernels, ops, flows, collectives."""
    rng = np.random.default_rng(seed)
    per_track = n_instructions // (chips * cores * len(ENGINES))
    n_dma = max(n_instructions // 10 // (chips * cores * len(QUEUES)), 1)
    kpc = layers * (len(OPS) - 1) * launches  # kernels per core
    tracks: dict[str, list] = {k: [] for k in ("track_id", "chip", "core", "kind", "name", "unit")}

    def track(chip: int, core: int, kind: str, name: str, unit: str = "") -> int:
        for k, v in zip(tracks, (len(tracks["track_id"]), chip, core, kind, name, unit)):
            tracks[k].append(v)
        return tracks["track_id"][-1]

    layout = {}
    for chip in range(chips):
        layout[(chip, "cc")] = track(chip, -1, "cc", "CC")
        layout[(chip, "hbm")] = track(chip, -1, "counter", "HBM Read Bandwidth", "GB/s")
        for core in range(cores):
            for kind, name, _ in ENGINES:
                layout[(chip, core, kind)] = track(chip, core, kind, name)
            for q in QUEUES:
                layout[(chip, core, q)] = track(chip, core, "dma_queue", q)
            layout[(chip, core, "kernel")] = track(chip, core, "kernel", "Kernels")
            layout[(chip, core, "thr")] = track(chip, core, "counter", "Throttling", "%")
    with TraceWriter(path, {"hardware": HARDWARE, "workload": {"name": "bench", "kind": "model"}}, overwrite=True) as w:
        w.write("tracks", tracks)
        next_id = 0
        dma_id = 10 * n_instructions
        kernel_rows = []
        core_end = {}
        for chip in range(chips):
            for core in range(cores):
                ends = []
                tm_start = None
                for kind, _, opcodes in ENGINES:
                    dur = rng.integers(20, 400, per_track)
                    if kind == "tensor_matrix":
                        dur = (dur / matmul_speed).astype(np.int64)
                    start = np.cumsum(dur + rng.integers(0, 120, per_track)) - dur
                    op = rng.integers(0, len(opcodes), per_track)
                    flops = np.where(kind == "tensor_matrix", dur * 2_000, 0)
                    ends.append(int(start[-1] + dur[-1]))
                    ids = np.arange(next_id, next_id + per_track)
                    next_id += per_track
                    if kind == "tensor_matrix":
                        tm_start, tm_ids = start, ids
                    kernel_rows.append((chip, core, kind, ids, start, dur, op, opcodes, flops))
                t_end = max(ends)
                core_end[(chip, core)] = t_end
                for q in QUEUES:
                    dur = rng.integers(300, 4000, n_dma)
                    start = np.cumsum(dur + rng.integers(0, 2 * t_end // n_dma, n_dma)) - dur
                    start = (start * (t_end / max(start[-1] + dur[-1], 1))).astype(np.int64)
                    dur = np.minimum(dur, np.r_[np.diff(start), dur[-1]])
                    ids = np.arange(dma_id, dma_id + n_dma)
                    dma_id += n_dma
                    bounds = np.linspace(0, t_end, kpc + 1).astype(np.int64)
                    kid = (chip * cores + core) * kpc + np.clip(np.searchsorted(bounds, start, "right") - 1, 0, kpc - 1)
                    w.write("dma", {
                        "id": ids, "track_id": np.full(n_dma, layout[(chip, core, q)], np.int32), "start_ns": start,
                        "dur_ns": dur, "bytes": 128 * rng.choice([512, 1024, 4096, 16384], n_dma),
                        "partitions": np.full(n_dma, 128, np.int32), "src": "hbm", "dst": "sbuf", "kernel_id": kid,
                    })
                    # each transfer unblocks the next TensorMatrix instruction after it ends
                    nxt = np.searchsorted(tm_start, start + dur)
                    ok = nxt < len(tm_start)
                    w.write("flows", {"src_id": ids[ok], "dst_id": tm_ids[nxt[ok]], "kind": "semaphore"})
                thr_t = np.arange(0, t_end, 20_000)
                w.write("counters", {"track_id": np.full(len(thr_t), layout[(chip, core, "thr")], np.int32),
                                     "time_ns": thr_t, "value": np.where(rng.random(len(thr_t)) < 0.05, 50.0, 100.0)})
        for chip, core, kind, ids, start, dur, op, opcodes, flops in kernel_rows:
            t_end = core_end[(chip, core)]
            bounds = np.linspace(0, t_end, kpc + 1).astype(np.int64)
            kid = (chip * cores + core) * kpc + np.clip(np.searchsorted(bounds, start, "right") - 1, 0, kpc - 1)
            w.write("instructions", {
                "id": ids, "track_id": np.full(len(ids), layout[(chip, core, kind)], np.int32),
                "start_ns": start, "dur_ns": dur, "opcode": (op.astype(np.int32), opcodes),
                "kernel_id": kid, "flops": flops, "bytes": dur * 64, "dtype": "bf16",
            })
        n_ops = layers * len(OPS)
        ops_per_layer = len(OPS) - 1
        k = {c: [] for c in ("kernel_id", "track_id", "chip", "core", "op_id", "name", "start_ns", "dur_ns", "flops",
                              "model_flops", "hbm_read_bytes", "hbm_write_bytes", "dtype")}
        for chip in range(chips):
            for core in range(cores):
                t_end = core_end[(chip, core)]
                bounds = np.linspace(0, t_end, kpc + 1).astype(np.int64)
                j = np.arange(kpc)
                layer, op = j // (ops_per_layer * launches), (j // launches) % ops_per_layer
                flops = rng.integers(10**8, 10**9, kpc)
                for col, v in (("kernel_id", (chip * cores + core) * kpc + j),
                               ("track_id", np.full(kpc, layout[(chip, core, "kernel")])),
                               ("chip", np.full(kpc, chip)), ("core", np.full(kpc, core)),
                               ("op_id", 1 + layers + layer * len(OPS) + op),
                               ("name", np.array([OPS[o][0].split(".")[-1] for o in op])),
                               ("start_ns", bounds[:-1]), ("dur_ns", np.diff(bounds)), ("flops", flops),
                               ("model_flops", flops * 95 // 100), ("hbm_read_bytes", rng.integers(10**6, 10**8, kpc)),
                               ("hbm_write_bytes", rng.integers(10**5, 10**7, kpc)),
                               ("dtype", np.where(op % 2 == 0, "bf16", "mxfp8"))):
                    k[col].append(v)
        w.write("kernels", {c: np.concatenate(v) for c, v in k.items()})
        span = max(core_end.values())
        op_rows = [(0, -1, "model", "BenchNet", "model", 0, span)]
        for layer in range(layers):
            t0, t1 = span * layer // layers, span * (layer + 1) // layers
            op_rows.append((1 + layer, 0, "layer", f"layer {layer}", "layer", t0, t1 - t0))
        for layer in range(layers):
            t0, t1 = span * layer // layers, span * (layer + 1) // layers
            for o, (name, kind) in enumerate(OPS):
                a = t0 + (t1 - t0) * o // len(OPS)
                b = t0 + (t1 - t0) * (o + 1) // len(OPS)
                op_rows.append((1 + layers + layer * len(OPS) + o, 1 + layer, "op", name, kind, a, b - a))
        w.write("ops", {c: [r[i] for r in op_rows] for i, c in enumerate(
            ("op_id", "parent_id", "level", "name", "kind", "start_ns", "dur_ns"))})
        cc = {c: [] for c in ("collective_id", "track_id", "chip", "rank", "group_size", "kind", "algorithm", "op_id",
                               "bytes", "arrive_ns", "start_ns", "end_ns", "wait_ns", "algo_bw_gbps", "bus_bw_gbps")}
        for layer in range(layers):
            t = span * (layer + 1) // layers
            arrive = [t - int(rng.integers(0, 20_000)) for _ in range(chips)]
            for chip in range(chips):
                for col, v in zip(cc, (layer, layout[(chip, "cc")], chip, chip, chips, "all_reduce", "ring",
                                       1 + layers + layer * len(OPS) + len(OPS) - 1, 64 << 20, arrive[chip],
                                       max(arrive), max(arrive) + 30_000, max(arrive) - arrive[chip], 2200.0, 2200.0)):
                    cc[col].append(v)
        w.write("collectives", cc)
    return path


def wall(cmd: list[str], repeat: int) -> tuple[float, float, float]:
    """(best, median) wall time of a command, and its largest peak RSS in MiB (the process's own
    VmHWM: pages of the memory-mapped trace it touched included)."""
    times, peaks = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
        peak = trnx_peak.peak_mib(proc.stderr)
        peaks.append(float("nan") if peak is None else peak)
    return min(times), statistics.median(times), max(peaks)


def pandas_baseline(path: Path) -> float:
    """Plain pandas: per (chip, core, engine) busy-time sums and counts, kernel FLOPs/bytes, DMA totals."""
    t = time.perf_counter()
    tracks = pd.read_feather(path / "tracks.arrow")
    ins = pd.read_feather(path / "instructions.arrow", columns=["track_id", "dur_ns", "opcode"])
    ins = ins.merge(tracks[["track_id", "chip", "core", "kind"]], on="track_id")
    ins.groupby(["chip", "core", "kind"], observed=True)["dur_ns"].agg(["sum", "size"])
    ker = pd.read_feather(path / "kernels.arrow")
    ker.groupby("chip")[["flops", "model_flops", "hbm_read_bytes", "hbm_write_bytes"]].sum()
    dma = pd.read_feather(path / "dma.arrow").merge(tracks[["track_id", "chip", "core"]], on="track_id")
    dma.groupby(["chip", "core"])[["dur_ns", "bytes"]].agg(["sum", "size"])
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instructions", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the traces here and keep them")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="analysis-bench-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        a = write_trace(tmp / "a.trnx", args.instructions, seed=1)
        b = write_trace(tmp / "b.trnx", args.instructions, seed=2, matmul_speed=1.1)
        print(f"wrote 2 traces of {args.instructions:,} instructions in {time.perf_counter() - t:.1f} s")
        from explorer.model.analysis.diff import diff
        from explorer.model.analysis.recommendations import recommend
        from explorer.model.analysis.summary import summarize
        from simcore.trace import open_trace

        base = min(pandas_baseline(a) for _ in range(args.repeat))
        trnx = trnx_peak.command
        rows = [
            ("trnx summary A --json", wall(trnx(["summary", str(a), "--json"]), args.repeat)),
            ("trnx summary A --json --no-recommendations",
             wall(trnx(["summary", str(a), "--json", "--no-recommendations"]), args.repeat)),
            ("trnx diff A B --json", wall(trnx(["diff", str(a), str(b), "--json"]), args.repeat)),
        ]
        for label, fn in (("summarize(A) in process", lambda: summarize(open_trace(a, validate=False))),
                          ("recommend(A) in process", lambda: recommend(open_trace(a, validate=False))),
                          ("diff(A, B) in process", lambda: diff(open_trace(a, validate=False), open_trace(b, validate=False)))):
            ts = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
            rows.append((label, (min(ts), statistics.median(ts), None)))
        print(f"baseline: plain pandas read + groupby of the same columns: {base:.2f} s (best of {args.repeat})")
        size = sum(f.stat().st_size for f in a.rglob("*") if f.is_file()) / 2**20
        print(f"{'what':<46} {'best':>8} {'median':>8} {'ratio':>7} {'peak RSS':>9}  goal")
        for label, (best, med, peak) in rows:
            goal = "< 5 s" if label.startswith("trnx") else ""
            rss = f"{peak:>5.0f} MiB" if peak is not None else ""
            print(f"{label:<46} {best:>7.2f}s {med:>7.2f}s {best / base:>6.2f}x {rss:>9}  {goal}")
        print(f"(peak RSS: the command's process, trace files memory-mapped; trace A is {size:.0f} MiB on disk)")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
