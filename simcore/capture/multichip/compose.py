"""Put every rank's compute on one timeline and resolve the collectives between them.

Each rank (logical core) runs its program in order: a stretch of compute (its class's simulated
duration x the rank's jitter/straggler factor for that stretch), then its part in a
collective, then the next stretch. A rank *arrives* at a collective when its own work
before it is done; the collective *starts* when the last rank of its group arrives
(every earlier rank waits: wait = start - arrive), and ends after its latency and its
transfer, which takes the links' capacity that other collectives running at the same
time leave (`collectives.links`). A blocking collective holds its rank until its own end;
an asynchronous one (a pipeline send, a gradient all-reduce) lets it go on computing, and
a later `wait` item holds it until that collective ends.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from simcore.collectives.links import LinkLedger
from simcore.parallel.plan import CommRef, StepPlan


@dataclass
class Timeline:
    """The composed step: each chip's segment starts and factors, and every collective's times."""

    seg_real: list[np.ndarray]       # per chip: real start of each segment
    factor: np.ndarray               # (chips, segments) time factor of each segment
    arrive: list[np.ndarray]         # per collective: per rank arrival
    start: np.ndarray                # per collective: start (last arrival)
    end: list[np.ndarray]            # per collective: per rank end
    ledger: LinkLedger
    end_ns: float


class Deadlock(RuntimeError):
    """Programs that wait on each other forever (a bug in the sharding, never a user error)."""


def compose(plan: StepPlan, seg_dur: list[np.ndarray], factor: np.ndarray, delay: np.ndarray,
            slice_ns: float, horizon_ns: float, seg_hbm: list[np.ndarray] | None = None) -> Timeline:
    """`seg_dur[c]` is rank c's simulated duration of each segment (between comm items) and
    `seg_hbm[c]` the HBM bytes it moves: a segment shares its chip's HBM with the collectives
    running then (it stretches when they leave it too little; `factor` says by how much)."""
    chips = plan.ranks        # one program per rank (the names below say chip for a rank)
    topo = plan.topo
    per_chip = topo.per_chip
    comms = [[it for it in prog if isinstance(it, CommRef)] for prog in plan.programs]
    ncoll = len(plan.collectives)
    # plain Python lists in the loop below: it visits every (rank, collective) pair, and numpy scalars
    # cost several times a list item there
    arrive: list[list] = [[None] * c.plan.ranks for c in plan.collectives]
    remaining = [c.plan.ranks for c in plan.collectives]
    start = np.full(ncoll, np.nan)
    end: list[np.ndarray | None] = [None] * ncoll
    rank_of = [c.plan.position for c in plan.collectives]
    waiting: list[list[int]] = [[] for _ in range(ncoll)]      # chips blocked on each collective
    ledger = LinkLedger(topo.chips, topo.capacity, slice_ns, horizon_ns, topo.link_tiers, topo.hbm)  # per chip
    seg_real = [[0.0] * (len(comms[c]) + 1) for c in range(chips)]
    fac = factor.tolist()
    dur = [list(map(float, x)) for x in seg_dur]
    hbm = [list(map(float, x)) for x in seg_hbm] if seg_hbm is not None else None
    t = [float(x) for x in delay]
    pos = [0] * chips                        # next comm item of each chip
    in_seg = [True] * chips                  # the chip is about to run segment pos (not yet added)
    done = [False] * chips
    runnable = deque(range(chips))

    def resolve(i: int) -> None:
        c = plan.collectives[i]
        p = c.plan
        s = float(max(arrive[i]))
        start[i] = s
        if p.coupled:
            e = ledger.flow(s + float(p.latency.max()), float(p.transfer.max()),
                            np.asarray(p.group) // per_chip, p.demand_out, p.demand_in, p.hbm_read)
            end[i] = np.full(p.ranks, e)
        else:
            ends = np.empty(p.ranks)
            for r, chip in enumerate(p.group):
                ends[r] = ledger.flow(s + float(p.latency[r]), float(p.transfer[r]), np.array([chip // per_chip]),
                                      p.demand_out[r:r + 1], p.demand_in[r:r + 1], p.hbm_read)
            end[i] = ends
        for chip in waiting[i]:
            runnable.append(chip)
        waiting[i] = []

    while runnable:
        c = runnable.popleft()
        if done[c]:
            continue
        mine, tc = comms[c], t[c]
        while True:
            k = pos[c]
            if in_seg[c]:
                seg_real[c][k] = tc
                d = dur[c][k] * fac[c][k]
                if hbm is not None and d > 0 and hbm[c][k] > 0:   # its HBM, shared with collectives
                    done_at = ledger.compute(tc, d, c // per_chip, hbm[c][k])
                    if done_at > tc + d * (1 + 1e-9):
                        fac[c][k] *= (done_at - tc) / d
                    tc = done_at
                else:
                    tc += d
                in_seg[c] = False
            if k >= len(mine):
                done[c] = True
                break
            ref = mine[k]
            i = ref.coll
            r = rank_of[i](c)
            if ref.wait:
                if end[i] is None:
                    waiting[i].append(c)
                    break
                tc = max(tc, float(end[i][r]))
            else:
                if arrive[i][r] is None:
                    arrive[i][r] = tc
                    remaining[i] -= 1
                    if remaining[i] == 0:
                        t[c] = tc
                        resolve(i)
                if ref.blocking:
                    if end[i] is None:
                        waiting[i].append(c)
                        break
                    tc = max(tc, float(end[i][r]))
            pos[c] += 1
            in_seg[c] = True
        t[c] = tc
    if not all(done):
        stuck = done.index(False)
        raise Deadlock(f"rank {stuck} waits forever at its collective #{int(pos[stuck])}")
    final = max(max(t), max((float(e.max()) for e in end if e is not None), default=0.0))
    factor[:] = np.array(fac).reshape(factor.shape)
    seg_real = [np.array(x) for x in seg_real]
    arrive = [np.array(x, np.float64) for x in arrive]
    return Timeline(seg_real, factor, arrive, start, end, ledger, final)  # type: ignore[arg-type]
