"""Collectives between chips: algorithms with alpha-beta costs per link tier (`cost`) and the
link ledgers that let concurrent collectives share the links (`links`)."""

from simcore.collectives.cost import (
    ALGORITHMS,
    CollectivePlan,
    all_to_all,
    bus_factor,
    plan_collective,
    send_recv,
)

__all__ = ["ALGORITHMS", "CollectivePlan", "all_to_all", "bus_factor", "plan_collective", "send_recv"]
