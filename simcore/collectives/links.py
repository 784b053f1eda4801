"""The chips' shared resources over time: link tiers, collective DMA and HBM, as fluid ledgers.

Like the HBM ledger of `timing/window.py`, sharing is fluid over time slices: every chip
offers, per tier and direction, bandwidth x slice bytes per slice, and likewise its ranks'
collective DMA and its HBM (the columns of `Topology.capacity`). A flow has a demand -- bytes
per (chip, column, direction) -- and an idle duration W; in each slice it progresses by what
the busiest of its entries can still carry, never faster than W allows. On an idle system it
therefore takes exactly W; flows that overlap on the same chip's links, DMA or HBM each slow
down. Collectives are flows (one per coupled group, or one per rank for all-to-all and
send/recv); so is each stretch of a rank's compute on its chip's HBM (`compute`), so a
collective's buffer traffic and the kernels' traffic share the HBM whichever comes first.

The ledger tallies, per chip and slice, the bytes sent over chip-to-chip links (the `Link
Bandwidth` counter) and the HBM bytes collectives read and wrote (added to the HBM counters;
compute's own bytes are already in them). Flows are served in the order they are resolved.
"""

from __future__ import annotations

import numpy as np

from simcore.jit import njit

SLICES_PER_GROWTH = 4096
LINK_SENT, HBM_READ, HBM_WRITE = 0, 1, 2     # tallies
NO_TALLY = -1


@njit(cache=True, nogil=True)
def _flow(t, left, W, chip, row, need, tally, frac, used, cap, served, slice_ns):
    """Advance a flow from time t with `left` of its work to do; returns (t, left). Entry e needs
    need[e] bytes of (chip[e], row[e]) per unit of work and adds frac[e] of them to tally[e]
    (HBM_READ also puts the rest in HBM_WRITE). Stops early (left > 0) when it runs past the
    ledger's slices so the caller can grow them."""
    n_slices = used.shape[2]
    j = int(t // slice_ns)
    while left > 1e-12:
        if j >= n_slices:
            return t, left
        slice_end = (j + 1) * slice_ns
        avail = slice_end - t
        if avail <= 1e-9:
            j += 1
            continue
        p = avail / W  # idle progress in the rest of this slice
        for e in range(need.shape[0]):
            q = (cap[row[e]] - used[chip[e], row[e], j]) / need[e]
            if q < p:
                p = q
        if p <= 1e-15:
            t = slice_end
            j += 1
            continue
        rate = p / avail
        take = left if left <= p else p
        for e in range(need.shape[0]):
            b = take * need[e]
            used[chip[e], row[e], j] += b
            k = tally[e]
            if k >= 0:
                served[chip[e], k, j] += b * frac[e]
                if k == 1:
                    served[chip[e], 2, j] += b * (1.0 - frac[e])
        if left <= p:
            return t + left / rate, 0.0
        left -= p
        t = slice_end
        j += 1
    return t, left


@njit(cache=True, nogil=True)
def _one(t, left, W, chip, row, need, used, cap, slice_ns):
    """`_flow` for a single untallied entry (a stretch of compute on its chip's HBM), without arrays."""
    n_slices = used.shape[2]
    j = int(t // slice_ns)
    while left > 1e-12:
        if j >= n_slices:
            return t, left
        slice_end = (j + 1) * slice_ns
        avail = slice_end - t
        if avail <= 1e-9:
            j += 1
            continue
        p = avail / W
        q = (cap[row] - used[chip, row, j]) / need
        if q < p:
            p = q
        if p <= 1e-15:
            t = slice_end
            j += 1
            continue
        rate = p / avail
        take = left if left <= p else p
        used[chip, row, j] += take * need
        if left <= p:
            return t + left / rate, 0.0
        left -= p
        t = slice_end
        j += 1
    return t, left


class LinkLedger:
    """Per chip and column of `capacity` (tiers, DMA, HBM) and direction: bytes used in each time slice."""

    def __init__(self, chips: int, capacity: np.ndarray, slice_ns: float, horizon_ns: float,
                 link_tiers: int | None = None, hbm: int | None = None) -> None:
        self.chips = chips
        self.columns = len(capacity)
        self.slice_ns = float(slice_ns)
        self.link_tiers = self.columns if link_tiers is None else link_tiers   # columns the Link counter counts
        self.hbm = hbm                                                        # the HBM column, if any
        n = max(SLICES_PER_GROWTH, int(np.ceil(horizon_ns / self.slice_ns)) + 1)
        # rows: column k out = 2k, in = 2k + 1; zeros are allocated lazily by the OS, so slices no
        # flow touches cost no memory
        self.used = np.zeros((chips, 2 * self.columns, n))
        self.served = np.zeros((chips, 3, n))
        self.cap = np.repeat(np.asarray(capacity, np.float64) * self.slice_ns, 2)

    def _grow(self) -> None:
        n = self.used.shape[2]
        self.used = np.concatenate([self.used, np.zeros((self.chips, 2 * self.columns, n))], axis=2)
        self.served = np.concatenate([self.served, np.zeros((self.chips, 3, n))], axis=2)

    def _run(self, t: float, W: float, chip: np.ndarray, row: np.ndarray, need: np.ndarray, tally: np.ndarray,
             frac: np.ndarray) -> float:
        keep = need > 0
        chip, row, need, tally, frac = chip[keep], row[keep], need[keep], tally[keep], frac[keep]
        if not len(need):
            return t + W
        left = 1.0
        while True:
            t, left = _flow(t, left, W, chip, row, need, tally, frac, self.used, self.cap, self.served, self.slice_ns)
            if left <= 1e-12:
                return t
            self._grow()

    def flow(self, t: float, W: float, chips: np.ndarray, demand_out: np.ndarray, demand_in: np.ndarray,
             hbm_read: float = 0.5) -> float:
        """End of a transfer starting at t that moves demand_out/in[i, column] bytes for chips[i]
        (the ranks of one chip add up) and takes W ns on an idle system. `hbm_read` is the share of
        its HBM column's bytes that are reads."""
        if W <= 0:
            return t
        chips = np.asarray(chips, np.int64)
        out, inn = np.asarray(demand_out, np.float64), np.asarray(demand_in, np.float64)
        if len(np.unique(chips)) < len(chips):  # ranks of one chip: their demands add up on its resources
            chips, inv = np.unique(chips, return_inverse=True)
            o, i = np.zeros((len(chips), out.shape[1])), np.zeros((len(chips), inn.shape[1]))
            np.add.at(o, inv, out)
            np.add.at(i, inv, inn)
            out, inn = o, i
        k = np.arange(out.shape[1])
        chip = np.repeat(chips, 2 * len(k))
        row = np.tile(np.concatenate([2 * k, 2 * k + 1]), len(chips)).astype(np.int64)
        need = np.concatenate([out, inn], axis=1).ravel()
        col_tally = np.full(len(k), NO_TALLY, np.int64)
        col_tally[:self.link_tiers] = LINK_SENT
        col_frac = np.ones(len(k))
        if self.hbm is not None and self.hbm < len(k):
            col_tally[self.hbm] = HBM_READ
            col_frac[self.hbm] = hbm_read
        tally = np.tile(np.concatenate([col_tally, np.full(len(k), NO_TALLY, np.int64)]), len(chips))
        frac = np.tile(np.concatenate([col_frac, np.ones(len(k))]), len(chips))
        return self._run(t, W, chip, row, need, tally, frac)

    def compute(self, t: float, W: float, chip: int, hbm_bytes: float) -> float:
        """End of a stretch of compute starting at t that moves `hbm_bytes` through its chip's HBM and
        takes W ns alone: it takes what HBM the chip's collectives leave (its bytes are not tallied:
        the kernels' HBM counters hold them)."""
        if W <= 0 or self.hbm is None or hbm_bytes <= 0:
            return t + max(W, 0.0)
        left = 1.0
        while True:
            t, left = _one(float(t), left, float(W), int(chip), 2 * self.hbm, float(hbm_bytes), self.used, self.cap,
                           self.slice_ns)
            if left <= 1e-12:
                return t
            self._grow()

    def sent(self, chip: int) -> np.ndarray:
        """Bytes chip sent per slice over its chip-to-chip links (all link tiers)."""
        return self.served[chip, LINK_SENT]

    def hbm_bytes(self, chip: int) -> tuple[np.ndarray, np.ndarray]:
        """HBM bytes the chip's collectives read and wrote per slice."""
        return self.served[chip, HBM_READ], self.served[chip, HBM_WRITE]
