"""Multi-chip captures: a kernel-level Llama 3.1 405B decode step on 16, 64 and 144 chips of a
Trn3 UltraServer Gen2 at TP=64 (LNC=2: 4 ranks a chip; goal: 144 chips under 60 s on this
2-core machine), and a DeepSeek-V3-like EP=64 MoE decode step (64 ranks on 16 chips)
simulated inline and on worker processes.

Each figure is `simcore.capture` end to end in this process (plan, simulate each distinct
chip program, compose the chips' timelines and collectives, write every chip's partition),
best of --repeat with the lowering cache cleared before each run, wall and CPU time.
Events = kernel rows + collective rank-rows (counter samples are reported beside them).
Baselines measured in the same run:
  - one chip: the same step's per-chip program simulated alone (what the simulator must do
    at least once), so `capture / one chip` shows what composing and writing N chips add;
  - raw write: the very same kernels, collectives and counters rows (read back from the
    trace) written as plain Arrow IPC files with pyarrow, no simulation.

    .venv/bin/python bench/sim_multichip.py [--repeat 2] [--skip-moe]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import simcore
from simcore.capture import CaptureConfig, resolve
from simcore.capture.multichip.chipsim import _CACHES, simulate_program
from simcore.capture.multichip.capture import chip_classes, sim_items
from simcore.lowering.kernels import clear_cache
from simcore.trace import open_trace

from sim_events import raw_write  # noqa: E402  (bench/ is the script's directory)

GEN2 = "trn3-ultraserver-gen2"
DENSE = dict(hardware=GEN2, workload="llama3.1-405b", phase="decode", context=4096, tp=64)   # 16 chips x 4 logical cores
MOE = dict(hardware="trn3-ultraserver-gen1", workload="deepseek-v3", phase="decode", context=4096, chips=16, ep=64,
           batch=256, dtype="mxfp8")   # 64 ranks on 16 chips; MXFP8: a rank's 4 experts fit its logical core


def fresh() -> None:
    clear_cache()
    _CACHES.clear()


def timed_capture(out: Path, opts: dict, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        fresh()
        w, c = time.perf_counter(), time.process_time()
        simcore.capture(out_path=out, overwrite=True, **opts)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def one_chip(opts: dict, repeat: int) -> float:
    """Simulate rank 0's program alone on its logical core (the per-class work of a symmetric step)."""
    res = resolve(CaptureConfig(**opts))
    plan = res.multichip.planner(res.workload.dtype, 0).build()
    _, reps = chip_classes(plan)
    items = sim_items(plan.programs[reps[0]])
    lnc = res.multichip.topo.lnc
    best = float("inf")
    for _ in range(repeat):
        fresh()
        t = time.perf_counter()
        simulate_program(res.hw.logical_core(lnc), items, lnc, [])
        best = min(best, time.perf_counter() - t)
    return best


def rows(out: Path) -> tuple[int, int, int, float]:
    """Kernel rows, collective rows, counter rows, and the raw Arrow write time of all three."""
    t = open_trace(out, validate=False)
    tables = {n: t.table(n).combine_chunks() for n in ("kernels", "collectives", "counters")}
    raw = out.parent / (out.name + ".raw")
    raw.mkdir()
    w = raw_write(tables, raw)
    shutil.rmtree(raw)
    return tables["kernels"].num_rows, tables["collectives"].num_rows, tables["counters"].num_rows, w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--skip-moe", action="store_true", help="skip the DeepSeek EP=64 step")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sim_multichip_"))
    try:
        simcore.capture(out_path=tmp / "warm.trnx", hardware=GEN2, workload="llama3.1-8b", tp=4, layers=1)  # JIT cache
        print(f"{'Llama 3.1 405B decode, kernel level':<44} {'wall s':>7} {'cpu s':>6} {'events':>10} {'events/s':>9} "
              f"{'counters':>10} {'one chip s':>10} {'raw write s':>11}")
        base = None
        for dp in (1, 4, 9):
            opts = dict(DENSE, chips=16 * dp, batch=dp)
            out = tmp / f"dense{dp}.trnx"
            wall, cpu = timed_capture(out, opts, args.repeat)
            k, c, n, raw = rows(out)
            one = one_chip(opts, args.repeat)
            ev = k + c
            base = base or wall
            trace = open_trace(out, validate=False)
            print(f"{f'{16 * dp} chips (tp=64, dp={dp}), {trace.duration_ns / 1e6:.2f} ms step':<44} {wall:>7.2f} "
                  f"{cpu:>6.2f} {ev:>10,} {ev / wall / 1e6:>8.2f}M {n:>10,} {one:>10.2f} {raw:>11.3f}   "
                  f"x{wall / base:.2f} vs 16 chips; capture/one chip {wall / one:.1f}; capture/raw write {wall / raw:.0f}")
        opts = dict(DENSE, chips=144, batch=9, jitter="2%", straggler="chip=5,slowdown=1.3")
        out = tmp / "imbalanced.trnx"
        wall, cpu = timed_capture(out, opts, args.repeat)
        k, c, n, raw = rows(out)
        waits = open_trace(out, validate=False).to_pandas("collectives").wait_ns.sum()
        print(f"{'144 chips + jitter 2% + straggler 1.3x':<44} {wall:>7.2f} {cpu:>6.2f} {k + c:>10,} "
              f"{(k + c) / wall / 1e6:>8.2f}M {n:>10,} {'':>10} {raw:>11.3f}   total wait {waits / 1e6:.1f} ms")
        if args.skip_moe:
            return
        print(f"\n{'DeepSeek-V3-like decode, EP=64, batch 256, MXFP8':<44} {'wall s':>7} {'cpu s':>6} {'events':>10} "
              f"{'events/s':>9} {'classes':>10}")
        for workers in (1, 2):
            out = tmp / f"moe{workers}.trnx"
            wall, cpu = timed_capture(out, dict(MOE, workers=workers), args.repeat)
            k, c, n, raw = rows(out)
            trace = open_trace(out, validate=False)
            label = "inline (--workers 1)" if workers == 1 else "2 worker processes (--workers 2)"
            print(f"{f'16 chips (64 ranks), {label}':<44} {wall:>7.2f} {cpu:>6.2f} {k + c:>10,} {(k + c) / wall / 1e6:>8.2f}M "
                  f"{trace.meta['capture']['chip_classes']:>10}   raw write {raw:.3f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
