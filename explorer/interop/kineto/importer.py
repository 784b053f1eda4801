"""PyTorch-profiler (Kineto) traces of one or many ranks -> one trnx trace.

Mapping (docs/interop.md has the full table):
- rank -> chip; each GPU of a rank -> a core; each CUDA stream -> a `kernel` track
  whose kernels land in `kernels` (and, one-to-one, in `instructions`, so engine
  views show them too);
- memcpy/memset -> `dma` rows on one `dma_queue` track per stream;
- NCCL/RCCL kernels -> also `collectives` rows on the rank's `cc` track, matched
  across ranks (kineto.collectives);
- `ProfilerStep#N` -> `layer` rows, `cpu_op`/`user_annotation` -> nested `op` rows,
  linked to kernels through the profiler's External id.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
import sys
import threading
import warnings
from concurrent.futures.process import BrokenProcessPool
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcore.errors import UserError
from explorer.interop.kineto.builder import MEMORY_COUNTER, Builder
from explorer.interop.kineto.events import RankEvents, extract
from explorer.interop.kineto.reader import KinetoFile, parse_kineto, read_json_bytes
from explorer.interop.kineto.nesting import _nesting_parents_loop, nesting_parents

__all__ = ["MEMORY_COUNTER", "ImportReport", "import_kineto", "nesting_parents", "_nesting_parents_loop", "rank_of"]
_RANK_IN_NAME = re.compile(r"rank[\s_\-.]*(\d+)", re.I)
SOURCE = "kineto"
PARALLEL_MIN_BYTES = 256 << 20  # below this much JSON, rank files are read one by one
SCAN_MIN_BYTES = 32 << 20  # from this much JSON in a call (or once loaded) the compiled scanner reads


@dataclass
class ImportReport:
    """What an import did, for the CLI to print and tests to check."""

    path: Path
    ranks: list[int]
    rows: dict[str, int]
    skipped_events: int
    repairs: dict[str, str] = field(default_factory=dict)  # file -> how it was repaired


def rank_of(kf: KinetoFile) -> int | None:
    """The rank from `distributedInfo`, else from a `rank<N>` in the file name."""
    info = kf.header.get("distributedInfo")
    if isinstance(info, dict):
        r = info.get("rank")
        if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 1 << 20:
            return r
        if isinstance(r, str) and r.isdigit() and int(r) < 1 << 20:
            return int(r)
    m = _RANK_IN_NAME.search(kf.path.name)
    if m and int(m.group(1)) < 1 << 20:
        return int(m.group(1))
    return None


def _assign_ranks(files: list[KinetoFile]) -> list[int]:
    ranks = [rank_of(f) for f in files]
    if len(files) == 1 and ranks[0] is None:
        return [0]
    for f, r in zip(files, ranks):
        if r is None:
            raise UserError(
                f"cannot tell the rank of {f.path}: it has no distributedInfo and its name has no 'rank<N>'."
            )
    seen: dict[int, Path] = {}
    for f, r in zip(files, ranks):
        if r in seen:
            raise UserError(f"{seen[r]} and {f.path} are both rank {r}; import each rank once.")
        seen[r] = f.path
    return [int(r) for r in ranks]  # type: ignore[arg-type]


def _hardware(files: list[KinetoFile], ranks: list[int], cores: int) -> dict[str, Any]:
    props = next((f.header.get("deviceProperties") for f in files if isinstance(f.header.get("deviceProperties"), list)), None)
    hw: dict[str, Any] = {"name": "gpu", "chips": max(ranks) + 1, "cores_per_chip": max(cores, 1)}  # chip = rank
    if props and isinstance(props[0], dict):
        d = props[0]
        if isinstance(d.get("name"), str):
            hw["device"] = d["name"]
        mem = d.get("totalGlobalMem")
        if isinstance(mem, int) and mem > 0:
            hw["hbm"] = {"capacity_bytes": mem}
    return hw


def import_kineto(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    include_python: bool = False,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
) -> ImportReport:
    """Import Kineto trace files (one per rank) into the trace directory `out`.

    `workers` > 1 reads rank files in that many processes when the caller is single
    threaded (the CLI passes the core count) and the input holds at least
    PARALLEL_MIN_BYTES of JSON; otherwise files are read one by one.
    """
    if not paths:
        raise UserError("name at least one Kineto trace file to import.")
    # The tolerant parsers allocate millions of objects that all live until the end: the
    # cyclic collector would re-walk them over and over (a third of the run) for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _import(paths, out, include_python, overwrite, progress, workers)
    finally:
        if was_enabled:
            gc.enable()


_SCANNER = "explorer.interop.kineto.scanned"


def read_scanned(data: bytes, include_python: bool) -> tuple[RankEvents, dict[str, Any]] | None:
    """The compiled scanner's reading of a file, or None.

    Imported on first use: loading numba and the compiled scanner from its disk cache
    costs a process ~0.25 s (compiling it, the first time on a machine, ~8 s), which a
    cold `trnx import` repays from about 32 MB of JSON (SCAN_MIN_BYTES); once loaded, it
    reads every file."""
    from explorer.interop.kineto.scanned import read_scanned as scanned

    return scanned(data, include_python)


def _read_rank(path: str | os.PathLike[str], include_python: bool, scan: bool) -> tuple[KinetoFile, RankEvents]:
    """One file's events as columns: the compiled scanner when asked and it reads the
    file, else the parsers (the parsed JSON is dropped once sorted into columns)."""
    p = Path(path)
    data, note = read_json_bytes(p)
    scanned = read_scanned(data, include_python) if scan else None
    if scanned is not None:
        return KinetoFile(p, [], scanned[1], note), scanned[0]
    f = parse_kineto(p, data, note)
    ev = extract(f.events, include_python=include_python)
    f.events = []
    return f, ev


def _input_bytes(paths: Sequence[str | os.PathLike[str]]) -> int:
    """About how much JSON the files hold (a gzipped file counted 8x its size)."""
    total = 0
    for p in paths:
        try:
            size = os.stat(p).st_size
        except OSError:
            continue  # reading it will say what is wrong
        total += size * 8 if str(p).endswith(".gz") else size
    return total


def _can_fork(paths: Sequence[str | os.PathLike[str]], workers: int, size: int) -> bool:
    """Parallel reading forks: only from a single-threaded process (the CLI), never under a
    GUI, and only for input big enough that a second core saves more than starting worker
    processes and copying their columns back costs (docs/PERFORMANCE.md)."""
    return (len(paths) > 1 and workers > 1 and (os.cpu_count() or 1) > 1
            and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
            and size >= PARALLEL_MIN_BYTES)


def _read_parallel(paths: Sequence[str | os.PathLike[str]], include_python: bool,
                   workers: int) -> list[tuple[KinetoFile, RankEvents]] | None:
    """Read rank files in worker processes (each parse is independent and CPU bound)."""
    from concurrent.futures import ProcessPoolExecutor

    n = min(workers, len(paths), os.cpu_count() or 1)
    try:
        with warnings.catch_warnings():
            # numpy's and Arrow's idle thread pools make Python warn about fork; the
            # children only parse JSON and never touch those pools or their locks.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(_read_rank, paths, [include_python] * len(paths), [True] * len(paths)))
    except (OSError, BrokenProcessPool):  # no processes to be had: read them here instead
        return None


def _import(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], include_python: bool,
            overwrite: bool, progress: Callable[[str], None] | None, workers: int) -> ImportReport:
    size = _input_bytes(paths)
    read = _read_parallel(paths, include_python, workers) if _can_fork(paths, workers, size) else None
    if read is None:
        scan = size >= SCAN_MIN_BYTES or _SCANNER in sys.modules
        read = []
        for p in paths:
            if progress:
                progress(f"reading {p}")
            read.append(_read_rank(p, include_python, scan))
    files = [f for f, _ in read]
    extracted = [e for _, e in read]
    ranks = _assign_ranks(files)
    lows = [e.min_ts for e in extracted if e.min_ts is not None]
    if not lows:
        where = f"{files[0].path} holds" if len(files) == 1 else f"none of the {len(files)} files holds"
        raise UserError(f"{where} no GPU kernel, copy or CPU op event to import.")
    t0 = min(lows)
    b = Builder(t0)
    for rank, ev in sorted(zip(ranks, extracted), key=lambda re_: re_[0]):
        b.add_rank(rank, ev)
    world = next((f.header["distributedInfo"].get("world_size") for f in files
                  if isinstance(f.header.get("distributedInfo"), dict)), None)
    meta = {
        "source": SOURCE,
        "hardware": _hardware(files, ranks, b.cores_per_chip),
        "workload": {"name": files[0].header.get("traceName") if isinstance(files[0].header.get("traceName"), str) else "pytorch-profile",
                     "kind": "profile", "ranks": sorted(ranks), "world_size": world if isinstance(world, int) else None},
        "simulator": {"name": "pytorch-profiler", "is_simulation": False},
        "capture": {"include_python": include_python, "files": [str(f.path) for f in files], "t0_us": t0,
                    # HTA drops the last profiler step when the trace names two or more (kineto.hta)
                    "hta_excluded": b.hta_excluded(len(frozenset().union(*(e.step_names for e in extracted))) >= 2)},
        "import": {"skipped_events": sum(e.skipped for e in extracted),
                   "repairs": {str(f.path): f.repaired for f in files if f.repaired}},
    }
    rows = b.write(Path(out), meta, overwrite, meta["workload"]["name"])
    return ImportReport(Path(out), sorted(ranks), rows, meta["import"]["skipped_events"], meta["import"]["repairs"])
