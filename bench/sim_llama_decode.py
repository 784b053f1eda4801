"""A full Llama 3.1 8B decode step (32 layers, batch 1, 4096 cached tokens) on trn3 with
instruction detail on one core, end to end through `simcore.capture` (goal: under 10 s).

Baselines in the same run: the same capture at kernel detail (what instruction detail
adds), and writing the step's instruction/DMA rows as raw Arrow IPC (no simulation).

    .venv/bin/python bench/sim_llama_decode.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import simcore
from simcore.lowering.kernels import clear_cache
from simcore.trace import open_trace

from sim_events import raw_write  # noqa: E402  (bench/ is the script's directory)

STEP = dict(workload="llama3.1-8b", phase="decode", batch=1, context=4096, hardware="trn3")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sim_decode_"))
    try:
        simcore.capture(out_path=tmp / "warm.trnx", workload="gemm", shape="512,512,512", cores="0")
        inst, kern, raw = [], [], []
        for r in range(args.repeat):
            clear_cache()  # each repetition lowers its kernels afresh, as a new process would
            t = time.perf_counter()
            simcore.capture(out_path=tmp / f"i{r}.trnx", cores="0", **STEP)
            inst.append(time.perf_counter() - t)
            clear_cache()
            t = time.perf_counter()
            simcore.capture(out_path=tmp / f"k{r}.trnx", **STEP)
            kern.append(time.perf_counter() - t)
            trace = open_trace(tmp / f"i{r}.trnx", validate=False)
            tables = {n: trace.table(n).combine_chunks() for n in ("instructions", "dma")}
            (tmp / f"raw{r}").mkdir()
            raw.append(raw_write(tables, tmp / f"raw{r}"))
        trace = open_trace(tmp / "i0.trnx")
        events = trace.row_count("instructions") + trace.row_count("dma")
        print(f"Llama 3.1 8B decode step, trn3, instruction detail on core 0: {min(inst):.3f} s "
              f"(goal < 10 s), {events:,} events ({events / min(inst) / 1e6:.2f}M events/s), "
              f"{trace.row_count('kernels'):,} kernels, simulated step {trace.duration_ns / 1e6:.3f} ms")
        print(f"  baseline kernel detail only: {min(kern):.3f} s (instruction detail costs {min(inst) / min(kern):.2f}x)")
        print(f"  baseline raw Arrow write of the same {events:,} rows: {min(raw):.4f} s "
              f"(capture / raw write = {min(inst) / min(raw):.1f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
