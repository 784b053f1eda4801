"""Link ledgers: collectives that overlap in time share each chip's link bandwidth.

Like the HBM ledger of `timing/window.py`, sharing is fluid over time slices: every chip
offers, per tier and direction, bandwidth x slice bytes per slice. A collective moves as
one flow per coupled group (ring, mesh, hierarchical: the ranks progress together) or one
per rank (all-to-all, send/recv). A flow has a demand -- bytes per (chip, tier, direction)
-- and an idle duration W (the alpha-beta transfer time); in each slice it progresses by
what the busiest of its (chip, tier, direction) entries can still carry, never faster
than W allows. On an idle system it therefore takes exactly W; two collectives on the
same links at the same time each slow down, and the bytes a chip sends per slice feed its
`Link Bandwidth` counter. Flows are served in the order the composer resolves them.
"""

from __future__ import annotations

import numpy as np

from simcore.jit import njit

SLICES_PER_GROWTH = 4096


@njit(cache=True, nogil=True)
def _flow(t, left, W, chip, row, need, used, cap, served, slice_ns, link_rows):
    """Advance a flow from time t with `left` of its work to do; returns (t, left). Stops early
    (left > 0) when it runs past the ledger's slices so the caller can grow them."""
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
            if need[e] > 0.0:
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
            if need[e] > 0.0:
                used[chip[e], row[e], j] += take * need[e]
                if row[e] % 2 == 0 and row[e] < link_rows:
                    served[chip[e], j] += take * need[e]
        if left <= p:
            return t + left / rate, 0.0
        left -= p
        t = slice_end
        j += 1
    return t, left


class LinkLedger:
    """Per chip, tier and direction: bytes already used in each time slice."""

    def __init__(self, chips: int, bandwidth: np.ndarray, slice_ns: float, horizon_ns: float,
                 link_tiers: int | None = None) -> None:
        self.chips = chips
        self.tiers = len(bandwidth)
        self.link_rows = 2 * (self.tiers if link_tiers is None else link_tiers)  # rows the Link counter counts
        self.slice_ns = float(slice_ns)
        n = max(SLICES_PER_GROWTH, int(np.ceil(horizon_ns / self.slice_ns)) + 1)
        # rows: tier k out = 2k, in = 2k + 1; zeros are allocated lazily by the OS, so slices no
        # collective touches cost no memory
        self.used = np.zeros((chips, 2 * self.tiers, n))
        self.served = np.zeros((chips, n))
        self.cap = np.repeat(np.asarray(bandwidth, np.float64) * self.slice_ns, 2)

    def _grow(self) -> None:
        n = self.used.shape[2]
        self.used = np.concatenate([self.used, np.zeros((self.chips, 2 * self.tiers, n))], axis=2)
        self.served = np.concatenate([self.served, np.zeros((self.chips, n))], axis=1)

    def flow(self, t: float, W: float, chips: np.ndarray, demand_out: np.ndarray, demand_in: np.ndarray) -> float:
        """End of a transfer starting at t that moves demand_out/in[i, tier] bytes for chips[i]
        and takes W ns on idle links."""
        if W <= 0:
            return t
        chips = np.asarray(chips, np.int64)
        if len(np.unique(chips)) < len(chips):  # ranks of one chip: their demands add up on its links
            chips, inv = np.unique(chips, return_inverse=True)
            out = np.zeros((len(chips), self.tiers))
            inn = np.zeros((len(chips), self.tiers))
            np.add.at(out, inv, np.asarray(demand_out, np.float64))
            np.add.at(inn, inv, np.asarray(demand_in, np.float64))
            demand_out, demand_in = out, inn
        k = np.arange(self.tiers)
        chip = np.repeat(np.asarray(chips, np.int64), 2 * self.tiers)
        row = np.tile(np.concatenate([2 * k, 2 * k + 1]), len(chips)).astype(np.int64)
        need = np.concatenate([np.asarray(demand_out, np.float64), np.asarray(demand_in, np.float64)], axis=1).ravel()
        keep = need > 0
        chip, row, need = chip[keep], row[keep], need[keep]
        if not len(need):
            return t + W
        left = 1.0
        while True:
            t, left = _flow(t, left, W, chip, row, need, self.used, self.cap, self.served, self.slice_ns,
                            self.link_rows)
            if left <= 1e-12:
                return t
            self._grow()

    def sent(self, chip: int) -> np.ndarray:
        """Bytes chip sent per slice over its chip-to-chip links (all link tiers)."""
        return self.served[chip]
