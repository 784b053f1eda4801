"""Instruction-level events simulated and written per second, end to end, on one core.

`simcore.capture` of a workload with instruction detail for core 0 (lowering, scheduling
with contention and throttle, trace tables, atomic Arrow write), timed as a user calls
it. Baseline in the same run: writing the very same `instructions` and `dma` rows (read
back from the trace) as raw Arrow IPC files with pyarrow, no simulation at all. The
ratio says what simulating costs on top of just writing the rows.

    .venv/bin/python bench/sim_events.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

import simcore
from simcore.lowering.kernels import clear_cache
from simcore.trace import open_trace

WORKLOADS = {
    "llama3.1-8b prefill seq 8192, 4 layers": dict(workload="llama3.1-8b", phase="prefill", seq=8192, layers=4),
    "gemm 8192^3 bf16": dict(workload="gemm", shape="8192,8192,8192"),
}


def raw_write(tables: dict[str, pa.Table], where: Path) -> float:
    t = time.perf_counter()
    for name, table in tables.items():
        with pa.OSFile(str(where / f"{name}.arrow"), "wb") as sink, ipc.new_file(sink, table.schema) as w:
            w.write_table(table, max_chunksize=1 << 20)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sim_events_"))
    try:
        simcore.capture(out_path=tmp / "warm.trnx", workload="gemm", shape="512,512,512", cores="0")  # JIT cache
        print(f"{'workload':<40} {'events':>9} {'capture s':>10} {'events/s':>10} {'raw write s':>12} {'raw ev/s':>10} {'ratio':>6}")
        for label, opts in WORKLOADS.items():
            caps, raws = [], []
            for r in range(args.repeat):
                out = tmp / f"run{r}.trnx"
                clear_cache()  # each repetition lowers its kernels afresh, as a new process would
                t = time.perf_counter()
                simcore.capture(out_path=out, cores="0", **opts)
                caps.append(time.perf_counter() - t)
                trace = open_trace(out, validate=False)
                tables = {n: trace.table(n).combine_chunks() for n in ("instructions", "dma")}
                events = sum(t.num_rows for t in tables.values())
                raw_dir = tmp / f"raw{r}"
                raw_dir.mkdir()
                raws.append(raw_write(tables, raw_dir))
                shutil.rmtree(out)
                shutil.rmtree(raw_dir)
            c, w = min(caps), min(raws)
            print(f"{label:<40} {events:>9,} {c:>10.3f} {events / c / 1e6:>9.2f}M {w:>12.4f} {events / w / 1e6:>9.1f}M "
                  f"{c / w:>6.1f}  (median capture {statistics.median(caps):.3f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
