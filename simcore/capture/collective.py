"""Collective micro-benchmarks: one collective over RANKS ranks, as nccom-test runs it.

A rank is a logical NeuronCore (--lnc physical cores): rank r sits on chip r // (cores / lnc),
so ranks share chips as nccom-test's do (`-r 2` on a trn1 device is its two cores). Every
rank is ready at time 0 on an idle system, so all arrive together (no wait); the collective
runs on each rank's collective-communication engine (`CC` track) and as a kernel on the
rank's first core. The cost is `simcore.collectives` on the preset's topology (model
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
    chip_link_bytes: tuple[float, ...] = ()   # per chip: bytes sent over its chip-to-chip links
    rank_hbm_read: tuple[float, ...] = ()     # per rank: HBM bytes it reads (what it sends and reduces)
    rank_hbm_write: tuple[float, ...] = ()    # per rank: HBM bytes written into it

    @property
    def duration_ns(self) -> float:
        return self.latency_ns + self.transfer_ns

    @property
    def algo_bw_gbps(self) -> float:
        return self.bytes / self.duration_ns

    @property
    def bus_bw_gbps(self) -> float:
        return self.algo_bw_gbps * self.bus_factor



def _cost(res: Resolved) -> CollectiveCost:
    """The collective on chips 0..RANKS-1 of the preset: the topology's tiers and the algorithm
    `--cc-algorithm` asks for (auto: the fastest). A single-chip preset is a flat switch at its
    link bandwidth, where this is the reference's ring (mesh for all-to-all) formula."""
    p = res.workload.ops[0].params
    kind = COLLECTIVES[p["name"]]
    nbytes, ranks = int(p["bytes"]), int(p["ranks"])
    topo = topology_of(res.hw, ranks, p["lnc"])
    group = tuple(range(ranks))
    if kind == "all_to_all":
        m = np.full((ranks, ranks), nbytes / ranks)
        plan = all_to_all(topo, group, m)
    else:
        plan = plan_collective(topo, kind, group, nbytes, res.config.cc_algorithm)
    lat, xfer = float(plan.latency.max()), float(plan.transfer.max())
    sent = topo.chip_load(group, plan.demand_out)[:, :topo.link_tiers].sum(axis=1)
    hbm = plan.demand_out[:, topo.hbm]
    return CollectiveCost(kind, plan.algorithm, ranks, nbytes, lat, xfer, plan.bus_factor, tuple(float(x) for x in sent),
                          tuple(float(x) for x in hbm * plan.hbm_read), tuple(float(x) for x in hbm * (1 - plan.hbm_read)))


def _chips(res: Resolved) -> tuple[int, int, int]:
    """(ranks, lnc, ranks per chip) of the benchmark."""
    p = res.workload.ops[0].params
    lnc = int(p["lnc"])
    return int(p["ranks"]), lnc, res.hw.cores_per_chip // lnc


def collective_meta(res: Resolved, meta: dict[str, Any]) -> None:
    """The system is the chips RANKS logical cores fill."""
    ranks, lnc, per_chip = _chips(res)
    chips = -(-ranks // per_chip)
    meta["hardware"] = dict(meta["hardware"], chips=chips)
    meta["capture"] = dict(meta["capture"], chips=chips, ranks=ranks, lnc=lnc, compute_cores=lnc)


class CollectiveTables:
    def __init__(self, res: Resolved) -> None:
        self.res = res
        self.cost = _cost(res)

    def write(self, w: TraceWriter) -> None:
        c = self.cost
        p = c.ranks
        name = self.res.workload.ops[0].params["name"]
        end = int(round(c.duration_ns))
        # per rank: Kernels (its first core), CC; per chip: HBM read/write, link counters
        ranks, lnc, per_chip = _chips(self.res)
        chips = -(-ranks // per_chip)
        r = np.arange(p)
        rank_chip = (r // per_chip).astype(np.int32)
        lcore = (r % per_chip).astype(np.int32)
        tr_chip = np.r_[np.repeat(rank_chip, 2), np.repeat(np.arange(chips, dtype=np.int32), 3)]
        tr_core = np.r_[np.stack([lcore * lnc, np.full(p, -1, np.int32)], axis=1).ravel(), np.full(3 * chips, -1)]
        tr_lcore = np.r_[np.repeat(lcore, 2), np.full(3 * chips, -1)]
        kinds = ["kernel", "cc"] * p + ["counter"] * (3 * chips)
        tnames = [n for i in range(p) for n in ("Kernels", "CC" if per_chip == 1 else f"CC rank {i}")] + \
            [S.COUNTER_HBM_READ, S.COUNTER_HBM_WRITE, S.COUNTER_LINK] * chips
        units = ["", ""] * p + ["GB/s"] * (3 * chips)
        w.write("tracks", {
            "track_id": np.arange(len(kinds), dtype=np.int32), "chip": tr_chip.astype(np.int32),
            "core": tr_core.astype(np.int32), "lcore": tr_lcore.astype(np.int32),
            "kind": kinds, "name": tnames, "unit": units,
        })
        base = (2 * r).astype(np.int32)
        counter_base = 2 * p + 3 * np.arange(chips, dtype=np.int32)
        w.write("ops", {"op_id": np.array([0, 1, 2], np.int64), "parent_id": np.array([-1, 0, 1], np.int64),
                        "level": ["model", "layer", "op"], "name": [self.res.workload.display, "benchmark", name],
                        "kind": ["model", "layer", c.kind], "start_ns": np.zeros(3, np.int64),
                        "dur_ns": np.full(3, end, np.int64)})
        nbytes = c.bytes
        reads = np.rint(np.array(c.rank_hbm_read)).astype(np.int64)     # the DMA's reads and writes (movement.py)
        writes = np.rint(np.array(c.rank_hbm_write)).astype(np.int64)
        w.write("kernels", {
            "kernel_id": np.arange(p, dtype=np.int64), "track_id": base, "chip": rank_chip,
            "core": lcore * lnc, "op_id": np.full(p, 2, np.int64), "name": c.kind, "start_ns": np.zeros(p, np.int64),
            "dur_ns": np.full(p, end, np.int64), "flops": np.zeros(p, np.int64), "model_flops": np.zeros(p, np.int64),
            "hbm_read_bytes": reads, "hbm_write_bytes": writes, "dtype": "bf16",
        })
        w.write("collectives", {
            "collective_id": np.zeros(p, np.int64), "track_id": base + 1, "chip": rank_chip,
            "rank": np.arange(p, dtype=np.int32), "group_size": np.full(p, p, np.int32), "kind": c.kind,
            "algorithm": c.algorithm, "op_id": np.full(p, 2, np.int64), "bytes": np.full(p, nbytes, np.int64),
            "arrive_ns": np.zeros(p, np.int64), "start_ns": np.zeros(p, np.int64), "end_ns": np.full(p, end, np.int64),
            "wait_ns": np.zeros(p, np.int64), "algo_bw_gbps": np.full(p, nbytes / end), "bus_bw_gbps": np.full(p, c.bus_factor * nbytes / end),
            "hbm_read_bytes": reads, "hbm_write_bytes": writes,
        })
        rows_t, rows_v, rows_track = [], [], []
        chip_rd = np.bincount(rank_chip, weights=reads, minlength=chips)   # a chip's counters add up its ranks'
        chip_wr = np.bincount(rank_chip, weights=writes, minlength=chips)
        for i, per_chip_value in ((0, chip_rd / end), (1, chip_wr / end), (2, np.array(c.chip_link_bytes) / end)):
            for chip in range(chips):
                rows_track += [int(counter_base[chip] + i)] * 2
                rows_t += [0, end]
                rows_v += [float(per_chip_value[chip]), 0.0]
        order = np.argsort(np.array(rows_track), kind="stable")
        w.write("counters", {"track_id": np.array(rows_track, np.int32)[order], "time_ns": np.array(rows_t, np.int64)[order],
                             "value": np.array(rows_v)[order]})
