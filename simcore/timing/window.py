"""Schedule one op's kernels on all cores of a chip at once, with DMA and HBM sharing.

Cores that run identical kernels (the usual case: an op split evenly over the cores) are
simulated once and weighted by how many cores they stand for, so a chip of 8 symmetric
cores costs one core's simulation while HBM still sees all 8 cores' traffic.

Sharing is fluid: while n transfers are active on a core they split its DMA engines,
and while the chip's transfers want more than the HBM bandwidth every transfer slows by
the ratio. The scheduler is run, the demand profile of its DMA transfers is measured,
transfers are re-timed under that profile (each progresses at 1/slowdown), and this
repeats until the window's end time settles (a few passes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.hardware import Hardware
from simcore.lowering.program import N_COMPUTE_ENGINES, Program
from simcore.timing.listsched import Profiles, Throttle, schedule

MAX_PASSES = 6
SETTLE = 1e-3  # relative change of the window's end that counts as settled


@dataclass
class Timed:
    """A program's schedule: start/end ns (float) and the tensor-engine rate factor."""

    start: np.ndarray
    end: np.ndarray
    rate: np.ndarray

    @property
    def span(self) -> tuple[float, float]:
        return float(self.start.min()), float(self.end.max())


def throttle_of(hw: Hardware) -> Throttle:
    t = hw.tensor.get("throttle", {})
    return Throttle(float(t.get("start_fraction", 1.0)), float(t.get("ramp_ns", 0.0)), float(t.get("cooldown_ns", 0.0)))


def _profiles(hw: Hardware, group: np.ndarray, start: np.ndarray, end: np.ndarray, nominal: np.ndarray,
              hbm_bytes: np.ndarray, weights: np.ndarray, n_groups: int) -> tuple[Profiles, float]:
    """Per-group slowdown profile from one pass; also the worst slowdown seen."""
    if len(start) == 0:
        return Profiles.none(n_groups), 1.0
    times, inv = np.unique(np.concatenate([start, end]), return_inverse=True)
    n = len(start)
    U = len(times)
    count = np.zeros((n_groups, U), np.float64)
    np.add.at(count, (group, inv[:n]), 1.0)
    np.add.at(count, (group, inv[n:]), -1.0)
    count = np.cumsum(count, axis=1)
    rate = hbm_bytes / np.maximum(nominal, 1e-9) * weights[group]
    chip = np.zeros(U, np.float64)
    np.add.at(chip, inv[:n], rate)
    np.add.at(chip, inv[n:], -rate)
    chip = np.cumsum(chip) / hw.hbm_bytes_per_ns
    f = np.maximum(np.maximum(count, chip[None, :]), 1.0)
    f[:, -1] = 1.0
    worst = float(f.max())
    dt = np.diff(times)
    g = np.empty((n_groups, U), np.float64)
    g[:, 0] = times[0]
    g[:, 1:] = times[0] + np.cumsum(dt[None, :] / f[:, :-1], axis=1)
    ptr = np.arange(n_groups + 1, dtype=np.int64) * U
    return Profiles(ptr, np.tile(times, n_groups), g.ravel(), f.ravel()), worst


def schedule_window(hw: Hardware, programs: list[Program], weights: list[int], t0: float,
                    thr_state: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[list[Timed], tuple[np.ndarray, np.ndarray]]:
    """Schedule programs (one per group of identical cores) that start together at `t0`.

    `thr_state` is each group's tensor-engine ramp state (busy-since, last-end) coming in;
    the state going out is returned with the schedules."""
    G = len(programs)
    NQ = N_COMPUTE_ENGINES + hw.dma_queues
    sizes = np.array([len(p) for p in programs], np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    queue = np.concatenate([p.engine.astype(np.int32) + g * NQ for g, p in enumerate(programs)])
    dur = np.concatenate([p.dur for p in programs])
    lat = np.concatenate([p.lat for p in programs])
    dep_ptr = np.concatenate([[0]] + [p.dep_ptr[1:] + sum(len(q.dep_idx) for q in programs[:g])
                                      for g, p in enumerate(programs)])
    dep_idx = np.concatenate([p.dep_idx + offs[g] for g, p in enumerate(programs)])
    grp = np.repeat(np.arange(G, dtype=np.int32), sizes)
    pe = np.concatenate([p.pe for p in programs])
    is_dma = np.concatenate([p.partitions > 0 for p in programs])
    thr_id = np.where(pe, grp, -1).astype(np.int32)
    dma_prof = np.where(is_dma, grp, -1).astype(np.int32)
    hbm = np.concatenate([(p.hbm_read + p.hbm_write).astype(np.float64) for p in programs])
    w = np.asarray(weights, np.float64)
    thr = throttle_of(hw)
    prof = Profiles.none(G)
    dsel = np.flatnonzero(is_dma)
    last_end = None
    for _ in range(MAX_PASSES):
        start, end, rate, state = schedule(queue, dur, lat, dep_ptr, dep_idx, thr_id, dma_prof, G * NQ, t0, thr, G, prof,
                                           thr_state)
        span_end = float(end.max())
        if last_end is not None and abs(span_end - last_end) <= SETTLE * max(span_end - t0, 1.0):
            break
        prof_new, worst = _profiles(hw, grp[dsel], start[dsel], end[dsel], dur[dsel], hbm[dsel], w, G)
        if worst <= 1.0 + 1e-9 and last_end is None:
            break  # no transfer ever shared bandwidth: the first pass is exact
        prof = prof_new
        last_end = span_end
    timed = [Timed(start[offs[g]:offs[g + 1]], end[offs[g]:offs[g + 1]], rate[offs[g]:offs[g + 1]]) for g in range(G)]
    return timed, state
