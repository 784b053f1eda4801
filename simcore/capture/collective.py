"""Collective micro-benchmarks: one collective over RANKS chips, timed with alpha-beta costs.

Every rank is ready at time 0 on an idle system, so all arrive together (no wait); the
collective runs on each chip's collective-communication engine (`CC` track) and as a
kernel on core 0. The cost is `simcore.collectives` on the preset's topology (model
captures with parallelism use the same plans, with real arrival skew and link sharing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.capture.config import Resolved
from simcore.collectives import all_to_all, plan_collective
from simcore.topology import topology_of
from simcore.trace import TraceWriter
from simcore.trace import schema as S
from simcore.workloads.micro import COLLECTIVES


@dataclass(frozen=True)
class CollectiveCost:
    """One collective micro-benchmark on an idle system: its cost and what a rank moves."""

    kind: str          # trace name: all_reduce, ...
    algorithm: str
    ranks: int
    bytes: int
    latency_ns: float
    transfer_ns: float
    bus_factor: float

    @property
    def duration_ns(self) -> float:
        return self.latency_ns + self.transfer_ns

    @property
    def algo_bw_gbps(self) -> float:
        return self.bytes / self.duration_ns

    @property
    def bus_bw_gbps(self) -> float:
        return self.algo_bw_gbps * self.bus_factor

    @property
    def link_bytes(self) -> float:
        """Bytes each rank sends over its links."""
        return self.bytes * self.bus_factor


def _cost(res: Resolved) -> CollectiveCost:
    """The collective on chips 0..RANKS-1 of the preset: the topology's tiers and the algorithm
    `--cc-algorithm` asks for (auto: the fastest). A single-chip preset is a flat switch at its
    link bandwidth, where this is the reference's ring (mesh for all-to-all) formula."""
    p = res.workload.ops[0].params
    kind = COLLECTIVES[p["name"]]
    nbytes, ranks = int(p["bytes"]), int(p["ranks"])
    topo = topology_of(res.hw, ranks)
    group = tuple(range(ranks))
    if kind == "all_to_all":
        m = np.full((ranks, ranks), nbytes / ranks)
        plan = all_to_all(topo, group, m)
    else:
        plan = plan_collective(topo, kind, group, nbytes, res.config.cc_algorithm)
    lat, xfer = float(plan.latency.max()), float(plan.transfer.max())
    return CollectiveCost(kind, plan.algorithm, ranks, nbytes, lat, xfer, plan.bus_factor)


def collective_meta(res: Resolved, meta: dict[str, Any]) -> None:
    """The system is RANKS chips of the preset."""
    ranks = int(res.workload.ops[0].params["ranks"])
    meta["hardware"] = dict(meta["hardware"], chips=ranks)
    meta["capture"] = dict(meta["capture"], chips=ranks, compute_cores=1)


class CollectiveTables:
    def __init__(self, res: Resolved) -> None:
        self.res = res
        self.cost = _cost(res)

    def write(self, w: TraceWriter) -> None:
        c = self.cost
        p = c.ranks
        name = self.res.workload.ops[0].params["name"]
        end = int(round(c.duration_ns))
        # tracks per chip: Kernels (core 0), CC, HBM read/write, link counters
        per_chip = [("kernel", 0, "Kernels", ""), ("cc", -1, "CC", ""), ("counter", -1, S.COUNTER_HBM_READ, "GB/s"),
                    ("counter", -1, S.COUNTER_HBM_WRITE, "GB/s"), ("counter", -1, S.COUNTER_LINK, "GB/s")]
        k = len(per_chip)
        chips = np.repeat(np.arange(p, dtype=np.int32), k)
        w.write("tracks", {
            "track_id": np.arange(p * k, dtype=np.int32), "chip": chips,
            "core": np.tile(np.array([t[1] for t in per_chip], np.int32), p),
            "kind": [t[0] for t in per_chip] * p, "name": [t[2] for t in per_chip] * p, "unit": [t[3] for t in per_chip] * p,
        })
        base = np.arange(p, dtype=np.int32) * k
        w.write("ops", {"op_id": np.array([0, 1, 2], np.int64), "parent_id": np.array([-1, 0, 1], np.int64),
                        "level": ["model", "layer", "op"], "name": [self.res.workload.display, "benchmark", name],
                        "kind": ["model", "layer", c.kind], "start_ns": np.zeros(3, np.int64),
                        "dur_ns": np.full(3, end, np.int64)})
        nbytes = c.bytes
        reads = {"all_gather": nbytes // p, "reduce_scatter": nbytes}.get(c.kind, nbytes)
        writes = {"all_gather": nbytes, "reduce_scatter": nbytes // p}.get(c.kind, nbytes)
        w.write("kernels", {
            "kernel_id": np.arange(p, dtype=np.int64), "track_id": base, "chip": np.arange(p, dtype=np.int32),
            "core": np.zeros(p, np.int32), "op_id": np.full(p, 2, np.int64), "name": c.kind, "start_ns": np.zeros(p, np.int64),
            "dur_ns": np.full(p, end, np.int64), "flops": np.zeros(p, np.int64), "model_flops": np.zeros(p, np.int64),
            "hbm_read_bytes": np.full(p, reads, np.int64), "hbm_write_bytes": np.full(p, writes, np.int64), "dtype": "bf16",
        })
        w.write("collectives", {
            "collective_id": np.zeros(p, np.int64), "track_id": base + 1, "chip": np.arange(p, dtype=np.int32),
            "rank": np.arange(p, dtype=np.int32), "group_size": np.full(p, p, np.int32), "kind": c.kind,
            "algorithm": c.algorithm, "op_id": np.full(p, 2, np.int64), "bytes": np.full(p, nbytes, np.int64),
            "arrive_ns": np.zeros(p, np.int64), "start_ns": np.zeros(p, np.int64), "end_ns": np.full(p, end, np.int64),
            "wait_ns": np.zeros(p, np.int64), "algo_bw_gbps": np.full(p, nbytes / end), "bus_bw_gbps": np.full(p, c.bus_factor * nbytes / end),
        })
        rows_t, rows_v, rows_track = [], [], []
        for i, value in ((2, reads / end), (3, writes / end), (4, c.link_bytes / end)):
            for chip in range(p):
                rows_track += [int(base[chip] + i)] * 2
                rows_t += [0, end]
                rows_v += [value, 0.0]
        order = np.argsort(np.array(rows_track), kind="stable")
        w.write("counters", {"track_id": np.array(rows_track, np.int32)[order], "time_ns": np.array(rows_t, np.int64)[order],
                             "value": np.array(rows_v)[order]})
