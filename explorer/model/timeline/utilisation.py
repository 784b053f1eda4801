"""Per-engine active percent over time and for a range.

An engine's active time is the busy time of its track (the union of its intervals,
from `lod.Coverage`), averaged over every core's instance of that engine. DMA is
active on a core when any of its queues moves data (the union of the queues), and
the collective row of a chip when any collective of that chip is in flight.
Everything comes from prefix sums, so a curve over any range costs O(bins x log n).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from explorer.model.timeline.lod import Coverage
from explorer.model.timeline.trace_index import TraceIndex

ENGINES: tuple[tuple[str, str], ...] = (
    # (label, track kind)
    ("Tensor", "tensor"),
    ("TensorMatrix", "tensor_matrix"),
    ("Vector", "vector"),
    ("Scalar", "scalar"),
    ("GpSimd", "gpsimd"),
    ("Sync", "sync"),
    ("DMA", "dma_queue"),
    ("CC", "cc"),
)


@dataclass
class UtilisationSeries:
    edges: np.ndarray  # ns, len n_bins + 1
    percent: dict[str, np.ndarray]  # engine label -> active % per bin


class Utilisation:
    """Active percent per engine kind, over the cores (or chip) selected."""

    def __init__(self, index: TraceIndex, chips: set[int] | None = None) -> None:
        self.index = index
        self.units: dict[str, list[Coverage]] = {}
        groups: dict[tuple[str, int, int], list] = defaultdict(list)
        for lane in index.lanes.values():
            tr = lane.track
            if chips is not None and tr.chip not in chips:
                continue
            label = next((lbl for lbl, kind in ENGINES if kind == tr.kind), None)
            if label is None:
                continue
            if tr.kind in ("dma_queue", "cc"):
                groups[(label, tr.chip, tr.core)].append(lane)
            else:
                self.units.setdefault(label, []).append(lane.coverage)
        for (label, _chip, _core), lanes in sorted(groups.items()):
            if len(lanes) == 1:
                cov = lanes[0].coverage
            else:  # any queue active: the union of the queues of one core
                start = np.concatenate([ln.coverage.start for ln in lanes])
                dur = np.concatenate([ln.coverage.dur for ln in lanes])
                order = np.argsort(start, kind="stable")
                cov = Coverage.build(start[order], dur[order], disjoint=False)
            self.units.setdefault(label, []).append(cov)
        order = [lbl for lbl, _ in ENGINES]
        self.units = {k: self.units[k] for k in order if k in self.units}

    @property
    def engines(self) -> list[str]:
        return list(self.units)

    def totals(self, t0: int, t1: int) -> dict[str, float]:
        """Active percent of each engine kind over [t0, t1)."""
        if t1 <= t0:
            return {k: 0.0 for k in self.units}
        out = {}
        for label, covs in self.units.items():
            busy = sum(c.busy_in(t0, t1) for c in covs)
            out[label] = 100.0 * busy / ((t1 - t0) * len(covs))
        return out

    def series(self, t0: float, t1: float, n_bins: int) -> UtilisationSeries:
        """Active percent of each engine kind in `n_bins` equal bins over [t0, t1)."""
        edges = np.linspace(t0, t1, max(int(n_bins), 1) + 1)
        percent = {}
        for label, covs in self.units.items():
            acc = np.zeros(len(edges) - 1)
            for c in covs:
                acc += c.fractions(edges)
            percent[label] = 100.0 * acc / len(covs)
        return UtilisationSeries(edges, percent)
