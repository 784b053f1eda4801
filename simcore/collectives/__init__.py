"""Collectives between ranks: algorithms with alpha-beta costs per link tier (`cost`) bounded by
the DMA and HBM bytes they move (`movement`), and the per-chip ledgers that let concurrent
collectives and compute share links, DMA and HBM (`links`)."""

from simcore.collectives.cost import (
    ALGORITHMS,
    CollectivePlan,
    all_to_all,
    bus_factor,
    plan_collective,
    send_recv,
)

__all__ = ["ALGORITHMS", "CollectivePlan", "all_to_all", "bus_factor", "plan_collective", "send_recv"]
