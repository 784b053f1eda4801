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
compute's own bytes are already in them). Flows are served in the order they are resolved;
the progress through the ledger is `timing/fluid.py`'s, the one the DMA/HBM sharing inside a
chip uses too.
"""

from __future__ import annotations

import numpy as np

from simcore.timing.fluid import NO_TALLY, advance, advance_one

SLICES_PER_GROWTH = 4096
LINK_SENT, HBM_READ, HBM_WRITE = 0, 1, 2     # tallies


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
        # rows: chip c's column k out = c x R + 2k, in = c x R + 2k + 1 (R = 2 x columns); tallies: c x 3 + k
        self.rows = 2 * self.columns
        self.used = np.zeros((chips * self.rows, n))
        self.served = np.zeros((chips * 3, n))
        self.cap = np.tile(np.repeat(np.asarray(capacity, np.float64) * self.slice_ns, 2), chips)

    def _grow(self) -> None:
        self.used = np.concatenate([self.used, np.zeros_like(self.used)], axis=1)
        self.served = np.concatenate([self.served, np.zeros_like(self.served)], axis=1)

    def _run(self, t: float, W: float, res: np.ndarray, need: np.ndarray, tally: np.ndarray, frac: np.ndarray,
             rest: np.ndarray) -> float:
        keep = need > 0
        res, need, tally, frac, rest = res[keep], need[keep], tally[keep], frac[keep], rest[keep]
        if not len(need):
            return t + W
        left = 1.0
        while True:
            t, left = advance(t, left, W, 0.0, self.slice_ns, self.used, self.cap, res, need, tally, frac, rest,
                              self.served, len(need))
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
        res = (np.repeat(chips * self.rows, 2 * len(k))
               + np.tile(np.concatenate([2 * k, 2 * k + 1]), len(chips))).astype(np.int64)
        need = np.concatenate([out, inn], axis=1).ravel()
        col_tally = np.full(len(k), NO_TALLY, np.int64)
        col_tally[:self.link_tiers] = LINK_SENT
        col_frac = np.ones(len(k))
        col_rest = np.full(len(k), NO_TALLY, np.int64)
        if self.hbm is not None and self.hbm < len(k):
            col_tally[self.hbm] = HBM_READ
            col_frac[self.hbm] = hbm_read
            col_rest[self.hbm] = HBM_WRITE
        untallied = np.full(len(k), NO_TALLY, np.int64)
        base = np.repeat(chips * 3, 2 * len(k))
        tally = np.tile(np.concatenate([col_tally, untallied]), len(chips))
        rest = np.tile(np.concatenate([col_rest, untallied]), len(chips))
        tally = np.where(tally >= 0, base + tally, NO_TALLY)
        rest = np.where(rest >= 0, base + rest, NO_TALLY)
        frac = np.tile(np.concatenate([col_frac, np.ones(len(k))]), len(chips))
        return self._run(t, W, res, need, tally, frac, rest)

    def compute(self, t: float, W: float, chip: int, hbm_bytes: float) -> float:
        """End of a stretch of compute starting at t that moves `hbm_bytes` through its chip's HBM and
        takes W ns alone: it takes what HBM the chip's collectives leave (its bytes are not tallied:
        the kernels' HBM counters hold them)."""
        if W <= 0 or self.hbm is None or hbm_bytes <= 0:
            return t + max(W, 0.0)
        left = 1.0
        row = int(chip) * self.rows + 2 * self.hbm
        while True:
            t, left = advance_one(float(t), left, float(W), 0.0, self.slice_ns, self.used, self.cap, row,
                                  float(hbm_bytes))
            if left <= 1e-12:
                return t
            self._grow()

    def sent(self, chip: int) -> np.ndarray:
        """Bytes chip sent per slice over its chip-to-chip links (all link tiers)."""
        return self.served[chip * 3 + LINK_SENT]

    def hbm_bytes(self, chip: int) -> tuple[np.ndarray, np.ndarray]:
        """HBM bytes the chip's collectives read and wrote per slice."""
        return self.served[chip * 3 + HBM_READ], self.served[chip * 3 + HBM_WRITE]
