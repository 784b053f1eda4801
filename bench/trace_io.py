"""Trace writer and reader throughput beside raw pyarrow.feather on the same table.

Run: .venv/bin/python bench/trace_io.py [--rows 10000000] [--repeat 3] [--hash-trace DIR]

The floor is pyarrow's own Feather v2 write/read of the identical 10M-row
`instructions` table in the same run; the goal is within 1.3x of it. Reported:
  write    TraceWriter (streamed 1M-row batches, dictionary unification, meta,
           atomic rename) vs feather.write_feather(uncompressed)
  open     open_trace with full validation (magic, schema, row counts, nulls,
           durations, per-track order, and across tables: track ids exist, times
           within +-2^61 ns, counts not negative) vs feather.read_table(memory_map=True)
  open-nv  open_trace(validate=False): meta, magic, schema and checksum (format 1.3) of the
           table read
  open-nc  open_trace with full validation but checksums=False (what `open` cost before 1.3)
  hash     the table file's checksum alone (simcore.trace.checksum.file_checksum, its 64 MiB
           blocks on up to 8 threads): the floor of what verifying it costs
  pandas   open_trace(...).to_pandas("instructions") (validated) vs
           feather.read_table(memory_map=True).to_pandas()
Each figure is the best of --repeat runs (the machine is shared and noisy).

Then the checksum algorithms side by side, alternated in the same run (format 1.5 writes BLAKE3,
1.3 and 1.4 wrote SHA-256): the write with each (TraceWriter(checksum_algorithm=...)), and the
hash alone of every table file of the bench's trace, or of --hash-trace DIR (a real capture,
e.g. bench/out/28M.trnx: 2.6 GB), on 2 threads as the writer hashes (wall and CPU seconds, CPU
seconds per GB; the files are in the page cache after the first pass).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather

from simcore.trace import TraceWriter, open_trace
from simcore.trace.checksum import ALGORITHMS, file_checksum
from simcore.trace.schema import INSTRUCTIONS

TRACKS = {"track_id": np.arange(64, dtype=np.int32), "chip": np.zeros(64, np.int32), "core": np.arange(64, dtype=np.int32) // 8,
          "kind": ["vector"] * 64, "name": [f"Vector{i}" for i in range(64)], "unit": [""] * 64}
OPCODES = ["MultiplyMoving", "LoadStationary", "TensorTensor", "Activation", "TensorCopy", "DmaTrigger"]


def make_table(rows: int, tracks: int = 64, batch: int = 1_000_000) -> pa.Table:
    """A realistic instructions table: grouped by track, sorted starts, dictionary opcodes."""
    rng = np.random.default_rng(0)
    per_track = rows // tracks
    batches = []
    vocab = pa.array(OPCODES)
    for b0 in range(0, rows, batch):
        i = np.arange(b0, min(rows, b0 + batch), dtype=np.int64)
        track = np.minimum(i // per_track, tracks - 1).astype(np.int32)
        within = i - track.astype(np.int64) * per_track
        dur = rng.integers(20, 400, len(i), dtype=np.int64)
        codes = pa.array(rng.integers(0, len(OPCODES), len(i)).astype(np.int32))
        batches.append(pa.RecordBatch.from_arrays([
            pa.array(i), pa.array(track), pa.array(within * 500), pa.array(dur),
            pa.DictionaryArray.from_arrays(codes, vocab), pa.array(i // 4096),
            pa.array(rng.integers(0, 1 << 24, len(i), dtype=np.int64)), pa.array(np.full(len(i), 2048, np.int64)),
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(i), np.int32)), pa.array(["bf16"])),
        ], schema=INSTRUCTIONS.schema))
    return pa.Table.from_batches(batches)


def best(fn, repeat: int, before=lambda: None) -> float:
    times = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best_wall_and_cpu(fn, repeat: int, before=lambda: None) -> tuple[float, float]:
    """The best wall time of `repeat` runs and the CPU seconds (all threads) of that run."""
    runs = []
    for _ in range(repeat):
        before()
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0, cpu_seconds() - c0))
    return min(runs)


def compare_algorithms(trace_dir: Path, table: pa.Table, hash_trace: Path | None, repeat: int) -> None:
    """Write and hash with each checksum algorithm, alternated, same run."""
    files = sorted((hash_trace or trace_dir).rglob("*.arrow"))
    size = sum(f.stat().st_size for f in files)
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(repeat):
        for algorithm in ALGORITHMS:
            def write() -> None:
                with TraceWriter(trace_dir, overwrite=True, checksum_algorithm=algorithm) as w:
                    w.write("tracks", TRACKS)
                    for batch in table.to_batches():
                        w.write("instructions", batch)

            def hash_all() -> None:
                with ThreadPoolExecutor(2) as pool:
                    for f in files:
                        file_checksum(f, pool, algorithm)

            results.setdefault(("write", algorithm), []).append(best_wall_and_cpu(write, 1))
            results.setdefault(("hash", algorithm), []).append(best_wall_and_cpu(hash_all, 1))
    written = (trace_dir / "instructions.arrow").stat().st_size
    print(f"\nchecksum algorithms, alternated, best of {repeat}: write = TraceWriter of the table above "
          f"({written / 1e6:,.0f} MB); hash = {len(files)} table files of {hash_trace or 'that trace'} "
          f"({size / 1e9:.2f} GB) on 2 threads")
    print(f"{'step':<7}{'algorithm':<15}{'wall':>9}{'CPU':>9}{'CPU s/GB':>10}")
    for (what, algorithm), runs in results.items():
        wall, cpu = min(runs)
        print(f"{what:<7}{algorithm:<15}{wall:>8.2f}s{cpu:>8.2f}s{cpu / ((written if what == 'write' else size) / 1e9):>10.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hash-trace", type=Path, help="hash this trace's table files too (a real capture)")
    args = ap.parse_args()
    table = make_table(args.rows)
    work = Path(tempfile.mkdtemp(prefix="trnx-bench-"))
    raw_file = work / "raw.arrow"
    trace_dir = work / "run.trnx"

    def clean_raw() -> None:  # each write starts from an empty directory
        raw_file.unlink(missing_ok=True)

    def clean_ours() -> None:
        shutil.rmtree(trace_dir, ignore_errors=True)

    def write_raw() -> None:
        feather.write_feather(table, raw_file, compression="uncompressed", chunksize=1_000_000)

    def write_ours() -> None:
        with TraceWriter(trace_dir, overwrite=True) as w:
            w.write("tracks", TRACKS)  # (validation checks every row's track exists)
            for batch in table.to_batches():
                w.write("instructions", batch)

    def open_raw() -> None:
        t = feather.read_table(raw_file, memory_map=True)
        assert t.num_rows == args.rows

    def open_ours() -> None:
        t = open_trace(trace_dir).instructions
        assert t.num_rows == args.rows

    def open_ours_unvalidated() -> None:
        t = open_trace(trace_dir, validate=False).instructions
        assert t.num_rows == args.rows

    def open_ours_unchecked() -> None:
        t = open_trace(trace_dir, checksums=False).instructions
        assert t.num_rows == args.rows

    def hash_ours() -> None:
        with ThreadPoolExecutor(8) as pool:
            file_checksum(trace_dir / "instructions.arrow", pool)

    def pandas_raw() -> None:
        assert len(feather.read_table(raw_file, memory_map=True).to_pandas()) == args.rows

    def pandas_ours() -> None:
        assert len(open_trace(trace_dir).to_pandas("instructions")) == args.rows

    try:
        results = []
        for what, ours, raw in (("write", write_ours, write_raw), ("open", open_ours, open_raw),
                                ("open-nv", open_ours_unvalidated, open_raw), ("open-nc", open_ours_unchecked, open_raw),
                                ("hash", hash_ours, open_raw), ("pandas", pandas_ours, pandas_raw)):
            if what == "write":
                raw_t, ours_t = best(raw, args.repeat, clean_raw), best(ours, args.repeat, clean_ours)
            else:
                raw_t, ours_t = best(raw, args.repeat), best(ours, args.repeat)
            results.append((what, ours_t, raw_t))
        size = (trace_dir / "instructions.arrow").stat().st_size
        print(f"instructions table: {args.rows:,} rows, {size / 1e6:,.0f} MB on disk")
        print(f"{'step':<9}{'trnx':>10}{'rows/s':>14}{'MB/s':>10}{'pyarrow':>10}{'ratio':>8}")
        for what, ours_t, raw_t in results:
            print(f"{what:<9}{ours_t:>9.3f}s{args.rows / ours_t:>14,.0f}{size / 1e6 / ours_t:>10,.0f}"
                  f"{raw_t:>9.3f}s{ours_t / raw_t:>8.2f}")
        compare_algorithms(trace_dir, table, args.hash_trace, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
