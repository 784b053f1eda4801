"""The CPU a capture's checksums cost, SHA-256 (formats 1.3-1.4) beside BLAKE3 (1.5), alternated in one run.

Run: .venv/bin/python bench/capture_checksums.py [--pairs 2] [--out /tmp/capture-checksums.trnx]

A whole capture's CPU time moves by seconds between identical runs on a shared machine (the
kernel's page-cache and reclaim work), more than the hashing costs, so this measures the hashing
itself: the thread CPU time (`time.thread_time`, user + system) of every block hash the writer's
hashing threads run, in a real capture (the 28M-event `llama3.1-8b` prefill, 2.6 GB of table
files), made in process with `TraceWriter(checksum_algorithm=...)`, after a warm-up capture.
The capture's wall and process CPU time are printed beside it. The output is deleted at the end.
"""

from __future__ import annotations

import argparse
import functools
import resource
import shutil
import time
from pathlib import Path

import simcore
import simcore.capture.engine as engine
from simcore.trace import checksum
from simcore.trace import writer as W

CAPTURE = dict(workload="llama3.1-8b", phase="prefill", seq=8192, detail="instruction", cores="all")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("/tmp/capture-checksums.trnx"))
    args = ap.parse_args()
    spent = [0.0]
    block_digest = checksum._mapped_block_digest

    def timed(*a: object) -> bytes:
        c = time.thread_time()
        try:
            return block_digest(*a)
        finally:
            spent[0] += time.thread_time() - c

    checksum._mapped_block_digest = timed

    def one(algorithm: str, note: str = "") -> None:
        engine.TraceWriter = functools.partial(W.TraceWriter, checksum_algorithm=algorithm)
        spent[0] = 0.0
        r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        path = simcore.capture(**CAPTURE, out_path=args.out, overwrite=True)
        wall, r = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF)
        size = sum(f.stat().st_size for f in path.rglob("*.arrow"))
        cpu = r.ru_utime - r0.ru_utime + r.ru_stime - r0.ru_stime
        print(f"{algorithm:<14}{size / 1e9:>7.2f} GB{spent[0]:>9.2f} s{spent[0] / size * 1e9:>9.3f}"
              f"{wall:>9.1f} s{cpu:>9.1f} s{open('/proc/loadavg').read().split()[0]:>7}{note}", flush=True)

    try:
        print(f"{'algorithm':<14}{'tables':>10}{'hashing':>11}{'s/GB':>9}{'wall':>11}{'CPU':>11}{'load':>7}")
        one(checksum.ALGORITHM, "  (warm-up: imports, numba's caches)")
        for _ in range(args.pairs):
            for algorithm in ("sha256-64MiB", "blake3-64MiB"):
                one(algorithm)
    finally:
        shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
