"""`trnx sweep` throughput: configurations per minute in one process against 2 Dask workers.

Two real grids, every configuration captured, written, opened and summarised:

  - light: Llama 3.1 8B decode (all 32 layers) on the Gen1 UltraServer, tp 1-8 x batch 1-128,
    16 configurations of ~0.3 s of CPU each;
  - heavy: Llama 3.1 405B decode on the Gen2 UltraServer (144 chips), tp 16/32/64 x pp 1/3/9 x
    batch 8/64, 18 configurations: 12 captures of up to 144 chips (~3 s of CPU each) and 6
    refusals (more chips than the UltraServer has).

Three ways, in the same run, each into a fresh directory:

  - one process   `run_sweep(..., workers=1)`: the baseline;
  - 2 workers     `run_sweep(..., workers=2)`: what `trnx sweep --workers 2` does, starting
                  its LocalCluster (2 single-threaded worker processes) and stopping it;
  - warm cluster  `run_sweep(..., scheduler=ADDRESS)` on a LocalCluster of 2 worker processes
                  started beforehand (what `--scheduler` on a running cluster costs).

The results.parquet files must be byte-identical (the script fails otherwise). Best of
--repeat, after a warm-up capture (numba's compiled scheduler is cached on disk, so worker
processes load it instead of compiling).

    .venv/bin/python bench/sweep_speed.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import simcore
from explorer.sweep.run import run_sweep
from explorer.sweep.spec import SweepSpec

GRIDS = {
    "light": ({"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-8b", "phase": "decode"},
              ["tp=1,2,4,8", "batch=1,8,32,128"]),
    "heavy": ({"hardware": "trn3-ultraserver-gen2", "workload": "llama3.1-405b", "phase": "decode"},
              ["tp=16,32,64", "pp=1,3,9", "batch=8,64"]),
}


def timed(base: Path, name: str, grid: str, repeat: int, **how) -> tuple[float, float, Path]:
    """Best wall time and the CPU time of this process (workers' CPU is not in it), and the output."""
    fixed, items = GRIDS[grid]
    best, cpu, out = float("inf"), 0.0, base / f"{grid}-{name}"
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        t, c = time.perf_counter(), time.process_time()
        run_sweep(out, fixed, items, **how)
        if time.perf_counter() - t < best:
            best, cpu = time.perf_counter() - t, time.process_time() - c
    return best, cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--grid", choices=[*GRIDS, "both"], default="both")
    a = ap.parse_args()
    from distributed import Client, LocalCluster

    base = Path(tempfile.mkdtemp(prefix="trnx-bench-sweep-"))
    try:
        simcore.capture(out_path=base / "warm.trnx", workload="gemm", shape="256,256,256")   # numba's cache, imports
        for grid in GRIDS if a.grid == "both" else [a.grid]:
            n = len(SweepSpec.build(*GRIDS[grid]).configurations)
            one = timed(base, "one", grid, a.repeat, workers=1)
            two = timed(base, "two", grid, a.repeat, workers=2)
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                              silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
                client.run(importlib.import_module, "explorer.sweep.task")   # workers up, the simulator imported
                warm = timed(base, "warm", grid, a.repeat, scheduler=cluster.scheduler_address)
            same = {(r[2] / "results.parquet").read_bytes() for r in (one, two, warm)}
            assert len(same) == 1, "the three ways wrote different results"
            print(f"{grid}: {n} configurations, {GRIDS[grid][0]['workload']} {' x '.join(GRIDS[grid][1])}; best of "
                  f"{a.repeat}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; results byte-identical")
            for label, (t, cpu, _) in (("one process", one), ("2 workers (cluster started and stopped)", two),
                                       ("2 workers (cluster already running)", warm)):
                print(f"  {label:<42} {t:6.1f} s  {60 * n / t:6.1f} configurations/min  x{one[0] / t:4.2f}   "
                      f"(this process: {cpu:5.1f} s CPU)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
