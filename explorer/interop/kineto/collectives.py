"""NCCL/RCCL kernels of many ranks -> one `collectives` row per rank per collective.

NCCL requires every rank of a process group to issue the group's collectives in
the same order, so the k-th collective kernel of group G on rank A and the k-th on
rank B are the same collective. Matching by (group, k) gives each collective its
ranks; then, as in the simulator, a rank *arrives* when its kernel starts, the
transfer *starts* when the last rank arrives, and the rank's *wait* is the gap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from explorer.interop.kineto.schema import Args

DTYPE_BYTES = {
    "float": 4, "float32": 4, "int": 4, "int32": 4, "uint32": 4,
    "double": 8, "float64": 8, "long": 8, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "bfloat16": 2, "short": 2, "int16": 2,
    "byte": 1, "char": 1, "bool": 1, "int8": 1, "uint8": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}

_KINDS = (  # (substring of the squashed name, kind); order matters
    ("reducescatter", "reduce_scatter"),
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("sendrecv", "send_recv"),
    ("send", "send_recv"),
    ("recv", "send_recv"),
    ("broadcast", "broadcast"),
    ("reduce", "reduce"),
    ("barrier", "barrier"),
)
_ALGORITHMS = ("collnet_direct", "collnet_chain", "collnet", "nvls_tree", "nvls", "ring", "tree", "pat")
_INTS = re.compile(r"-?\d+")


@lru_cache(maxsize=4096)
def collective_kind(text: str) -> str:
    """'allreduce', '_allgather_base', 'ncclDevKernel_AllGather_RING_LL' -> a schema kind."""
    squashed = re.sub(r"[^a-z]", "", text.lower())
    for needle, kind in _KINDS:
        if needle in squashed:
            return kind
    return "other"


@lru_cache(maxsize=4096)
def algorithm_of(kernel_name: str) -> str:
    """The NCCL algorithm a kernel name carries (`..._RING_LL` -> ring), or ''."""
    parts = kernel_name.lower().split("_")
    joined = "_".join(parts)
    for algo in _ALGORITHMS:
        if f"_{algo}_" in f"_{joined}_":
            return algo
    return ""


def _int(value: Any, default: int = -1) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return v if -(1 << 62) < v < (1 << 62) else default


def _ranks(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list):
        return tuple(_int(v) for v in value) or None
    if isinstance(value, str):
        return _ranks_text(value)
    return None


@lru_cache(maxsize=1024)
def _ranks_text(value: str) -> tuple[int, ...] | None:
    return tuple(int(x) for x in _INTS.findall(value)[:1 << 16]) or None


def message_bytes(args: Any) -> int:
    """Per-rank message size S: the larger of input and output element counts x element size."""
    n = max(_int(args.get("In msg nelems"), 0), _int(args.get("Out msg nelems"), 0))
    size = DTYPE_BYTES.get(str(args.get("dtype", "")).lower().replace("torch.", ""), 0)
    return max(0, n * size)


@dataclass
class CommKernel:
    """One rank's NCCL kernel, with whatever the profiler recorded about it (`args`: a
    dict, or anything with the same `get`)."""

    rank: int
    start_ns: int
    end_ns: int
    name: str
    args: Any
    op_id: int = -1


_ARG_KEYS = ("Process Group Ranks", "Process Group Name", "Collective name", "Group size", "In msg nelems",
             "Out msg nelems", "dtype")


def _describe(a: Any, name: str, rank: int) -> tuple[Any, str, int, int, str, int]:
    """What one rank's kernel says about its collective: (process group key, kind, group
    size or 0, rank in the group, algorithm, message bytes)."""
    ranks = _ranks(a.get("Process Group Ranks"))
    pg = a.get("Process Group Name")
    pg_key = str(pg) if pg is not None else (ranks if ranks is not None else "world")
    size = _int(a.get("Group size"), 0)
    return (pg_key, collective_kind(str(a.get("Collective name") or name)),
            size if 0 < size < 1 << 31 else (len(ranks) if ranks else 0),
            ranks.index(rank) if ranks and rank in ranks else rank, algorithm_of(name), message_bytes(a))


def match(kernels: list[CommKernel]) -> dict[str, np.ndarray]:
    """Group comm kernels of all ranks into collectives; per-rank arrive/start/end/wait.

    Kernels of a training loop repeat the same few argument sets: each distinct set (per
    rank) is described once."""
    groups: dict[tuple[Any, ...], int] = {}
    seq: dict[tuple[int, Any], int] = {}
    described: dict[tuple[Any, ...], tuple[Any, str, int, int, str, int]] = {}
    coll = np.empty(len(kernels), dtype=np.int64)
    order = sorted(range(len(kernels)), key=lambda i: (kernels[i].rank, kernels[i].start_ns))
    group_size = np.empty(len(kernels), dtype=np.int32)
    rank_in_group = np.empty(len(kernels), dtype=np.int32)
    kinds: list[str] = [""] * len(kernels)
    algos: list[str] = [""] * len(kernels)
    nbytes = np.empty(len(kernels), dtype=np.int64)
    for i in order:
        k = kernels[i]
        a = k.args
        if type(a) is Args:  # the scanner's and msgspec's args: attributes, no lookups by key
            sig = (k.rank, k.name, a.pg_ranks, a.pg_name, a.collective_name, a.group_size, a.in_nelems, a.out_nelems, a.dtype)
        else:
            sig = (k.rank, k.name, *[a.get(key) for key in _ARG_KEYS])
        try:
            d = described.get(sig)
        except TypeError:  # an unhashable value (a list of ranks): describe it every time
            d = _describe(a, k.name, k.rank)
        else:
            if d is None:
                d = described[sig] = _describe(a, k.name, k.rank)
        pg_key, kinds[i], group_size[i], rank_in_group[i], algos[i], nbytes[i] = d
        stream_key = (k.rank, pg_key)
        n = seq.get(stream_key, 0)
        seq[stream_key] = n + 1
        key = (pg_key, n)
        cid = groups.get(key)
        if cid is None:
            cid = groups[key] = len(groups)
        coll[i] = cid
    arrive = np.array([k.start_ns for k in kernels], dtype=np.int64)
    end = np.array([k.end_ns for k in kernels], dtype=np.int64)
    chip = np.array([k.rank for k in kernels], dtype=np.int32)
    n_coll = len(groups)
    last = np.full(n_coll, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, coll, arrive)
    start = last[coll]
    end = np.maximum(end, start)  # clocks of different hosts can disagree by a little
    members = np.bincount(coll, minlength=n_coll)[coll].astype(np.int32)
    group_size = np.where(group_size > 0, group_size, members)
    span = end - start
    algo_bw = np.divide(nbytes, span, out=np.zeros(len(kernels)), where=span > 0)  # bytes/ns = GB/s
    p = group_size.astype(np.float64)
    factor = np.where(
        np.array([k == "all_reduce" for k in kinds], dtype=bool), 2 * (p - 1) / np.maximum(p, 1), (p - 1) / np.maximum(p, 1)
    )
    return {
        "collective_id": coll,
        "op_id": np.array([k.op_id for k in kernels], dtype=np.int64),
        "chip": chip,
        "rank": rank_in_group,
        "group_size": group_size,
        "kind": kinds,
        "algorithm": algos,
        "bytes": nbytes,
        "arrive_ns": arrive,
        "start_ns": start,
        "end_ns": end,
        "wait_ns": start - arrive,
        "algo_bw_gbps": algo_bw,
        "bus_bw_gbps": algo_bw * factor,
    }
