"""Parallel degrees and the rank layout: which ranks form the TP, DP, EP and pipeline groups.

A rank is a logical NeuronCore; rank r sits on chip r // (ranks per chip) (`topology`).
Megatron/NxD order: tensor parallel is the fastest-varying rank index, then data
parallel, then pipeline stage -- rank = stage * (dp * tp) + dp_rank * tp + tp_rank -- so a
TP group is consecutive ranks (the logical cores of a chip first, then chips inside a
server, where the links are fastest) and pipeline neighbours are dp * tp ranks apart.
Expert parallel groups are consecutive blocks of `ep` ranks inside a stage (ep divides
dp * tp): experts are spread over the ranks of a block, and each block holds every expert
once. (The methods below say `chip` for a rank.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache


@lru_cache(maxsize=1 << 16)
def _run_of(first: int, n: int, step: int) -> tuple[int, ...]:
    """(first, first + step, ..., first + (n - 1) step), built once."""
    return tuple(range(first, first + n * step, step))


@dataclass(frozen=True)
class Parallelism:
    tp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    sp: bool = False            # sequence parallel: norms and residuals on tokens / tp, AG/RS instead of AR
    microbatches: int = 1

    @property
    def ranks(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def stage_size(self) -> int:
        return self.tp * self.dp

    def coords(self, chip: int) -> tuple[int, int, int]:
        """(stage, dp rank, tp rank) of a chip."""
        stage, rest = divmod(chip, self.stage_size)
        d, t = divmod(rest, self.tp)
        return stage, d, t

    def chip(self, stage: int, d: int, t: int) -> int:
        return stage * self.stage_size + d * self.tp + t

    def tp_group(self, chip: int) -> tuple[int, ...]:
        """Consecutive ranks: the same tuple object for every member (the planner asks per layer)."""
        first = chip - chip % self.tp
        return _run_of(first, self.tp, 1)

    def dp_group(self, chip: int) -> tuple[int, ...]:
        s, _, t = self.coords(chip)
        return _run_of(s * self.stage_size + t, self.dp, self.tp)

    def ep_group(self, chip: int) -> tuple[int, ...]:
        s, d, t = self.coords(chip)
        local = d * self.tp + t
        first = (local // self.ep) * self.ep
        return tuple(s * self.stage_size + first + i for i in range(self.ep))

    def expert_dp_group(self, chip: int) -> tuple[int, ...]:
        """Chips holding the same experts (the same position in every EP block of the stage)."""
        s, d, t = self.coords(chip)
        local = d * self.tp + t
        pos = local % self.ep
        return tuple(s * self.stage_size + b + pos for b in range(0, self.stage_size, self.ep))

    def to_dict(self) -> dict:
        return asdict(self)
