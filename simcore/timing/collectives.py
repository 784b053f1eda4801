"""Alpha-beta cost of collectives (shared/reference/trn3-hardware.md).

For p ranks, message S bytes per rank, per-step latency a and per-chip link bandwidth B:
  ring all-reduce           2(p-1) a + 2(p-1)/p * S/B     bus factor 2(p-1)/p
  all-gather / reduce-scatter (p-1) a + (p-1)/p * S/B     bus factor (p-1)/p
  all-to-all (switch)        (p-1) a + (p-1)/p * S/B      bus factor (p-1)/p
Bus bandwidth = algorithm bandwidth (S / time) x the bus factor, so large messages
approach B and small ones are latency bound.
"""

from __future__ import annotations

from dataclasses import dataclass

COLLECTIVE_KINDS = {
    "allreduce": ("all_reduce", "ring"),
    "allgather": ("all_gather", "ring"),
    "reducescatter": ("reduce_scatter", "ring"),
    "alltoall": ("all_to_all", "mesh"),
}


@dataclass(frozen=True)
class CollectiveCost:
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


def collective_cost(name: str, nbytes: int, ranks: int, alpha_ns: float, link_gbps: float) -> CollectiveCost:
    kind, algorithm = COLLECTIVE_KINDS[name]
    p = ranks
    steps = 2 * (p - 1) if kind == "all_reduce" else p - 1
    factor = 2 * (p - 1) / p if kind == "all_reduce" else (p - 1) / p
    return CollectiveCost(kind, algorithm, p, nbytes, steps * alpha_ns, factor * nbytes / link_gbps, factor)
