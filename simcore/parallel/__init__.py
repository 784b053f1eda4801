"""Parallelism across chips: rank layout (`layout`), NxD/Megatron-style sharding of a model
step into per-chip programs (`plan`), MoE routing with skew (`routing`), per-chip memory
(`memory`) and injected imbalance (`imbalance`)."""

from simcore.parallel.imbalance import Straggler, compute_factors, parse_jitter, parse_stragglers
from simcore.parallel.layout import Parallelism
from simcore.parallel.plan import Collective, CommRef, Compute, Planner, StepPlan

__all__ = ["Collective", "CommRef", "Compute", "Parallelism", "Planner", "StepPlan", "Straggler", "compute_factors",
           "parse_jitter", "parse_stragglers"]
