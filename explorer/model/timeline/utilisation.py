"""Per-engine active percent over time and for a range.

An engine's active time is the busy time of its track (the union of its intervals,
from `lod.Coverage`), averaged over every core's instance of that engine. DMA is
active on a core when any of its queues moves data (the union of the queues), and
the collective row of a chip when any collective of that chip is in flight.
Everything comes from prefix sums, so a curve over any range costs O(bins x log n).

The unions of DMA queues are sorted and merged on first use (the panel's worker), not when
the window opens: for a 100M-event trace that is ~0.5 s the first frame need not wait for.
"""

from __future__ import annotations

import threading
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
        self._single: dict[str, list[Coverage]] = {}
        self._groups: dict[tuple[str, int, int], list] = defaultdict(list)
        for lane in index.lanes.values():
            tr = lane.track
            if chips is not None and tr.chip not in chips:
                continue
            label = next((lbl for lbl, kind in ENGINES if kind == tr.kind), None)
            if label is None:
                continue
            if tr.kind in ("dma_queue", "cc"):
                self._groups[(label, tr.chip, tr.core)].append(lane)
            else:
                self._single.setdefault(label, []).append(lane.coverage)
        present = set(self._single) | {label for label, _chip, _core in self._groups}
        self._engines = [lbl for lbl, _ in ENGINES if lbl in present]
        self._units: dict[str, list[Coverage]] | None = None
        self._lock = threading.Lock()

    @property
    def units(self) -> dict[str, list[Coverage]]:
        """Engine label -> the coverages averaged over (one per core's engine, or queue union)."""
        with self._lock:
            if self._units is None:
                self._units = self._build_units()
            return self._units

    def _build_units(self) -> dict[str, list[Coverage]]:
        units = {k: list(v) for k, v in self._single.items()}
        for (label, _chip, _core), lanes in sorted(self._groups.items()):
            if len(lanes) == 1:
                cov = lanes[0].coverage
            else:  # any queue active: the union of the queues of one core
                start = np.concatenate([ln.coverage.start for ln in lanes])
                dur = np.concatenate([ln.coverage.dur for ln in lanes])
                order = np.argsort(start, kind="stable")
                cov = Coverage.build(start[order], dur[order], disjoint=False)
            units.setdefault(label, []).append(cov)
        return {k: units[k] for k in self._engines}

    @property
    def engines(self) -> list[str]:
        return list(self._engines)

    def totals(self, t0: int, t1: int) -> dict[str, float]:
        """Active percent of each engine kind over [t0, t1)."""
        if t1 <= t0:
            return {k: 0.0 for k in self._engines}
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
