"""The multi-chip part of a resolved capture: the model step, its parallelism and topology, and
the imbalance and detail asked for (what `capture.resolve_multichip` checked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simcore.parallel import Parallelism, Planner, Straggler
from simcore.topology import Topology
from simcore.workloads.models import ModelConfig


@dataclass
class MultiChip:
    """The multi-chip part of a resolved capture."""

    cfg: ModelConfig
    phase: str
    batch: int
    seq: int
    context: int
    layers: int
    par: Parallelism
    topo: Topology
    jitter: float = 0.0
    stragglers: list[Straggler] = field(default_factory=list)
    expert_skew: float = 0.0
    detail_chips: list[int] = field(default_factory=list)
    algorithm: str = "auto"
    workers: int | None = None
    fusion: bool = True       # fused NKI kernels (--fusion on, inference phases)

    def meta(self) -> dict[str, Any]:
        """meta.json `capture` keys; option names match CaptureConfig so a trace can be re-run."""
        out: dict[str, Any] = {"parallelism": self.par.to_dict(), "chips": self.topo.chips, "ranks": self.par.ranks,
                               "lnc": self.topo.lnc,
                               "sequence_parallel": self.par.sp, "microbatches": self.par.microbatches,
                               "topology": self.topo.describe(), "jitter": self.jitter,
                               "straggler": ";".join(s.to_text() for s in self.stragglers) or None,
                               "stragglers": [s.to_dict() for s in self.stragglers],
                               "expert_skew": self.expert_skew if self.cfg.moe is not None else None,
                               "detail_chips": self.detail_chips or None, "cc_algorithm": self.algorithm}
        return {k: v for k, v in out.items() if v is not None}

    def planner(self, dtype: str, seed: int) -> Planner:
        return Planner(self.cfg, self.phase, self.batch, self.seq, self.context, self.layers, dtype, self.par,
                       self.topo, algorithm=self.algorithm, expert_skew=self.expert_skew, seed=seed,
                       fusion=self.fusion)
