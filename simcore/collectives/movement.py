"""What a collective asks of each rank's DMA engines and HBM, beside the links it crosses.

Every byte a collective moves is a DMA transfer from one rank's HBM to another's (or to its
own): the sender's DMA engines read it and write it into the receiver's HBM, and a reduction
step reads the local chunk and the one received and writes their sum -- "Ring needs to do
1R1W (one read / one write)" per hop of an all-gather and "2R1W (two reads / 1 write)" per
hop of a reduce-scatter (neuron-runtime/explore/intranode-collective-comm.rst). Counted per
rank for p ranks and S bytes per rank (the all-gather's S is the gathered buffer), in
chunks c = S / p:

  all-gather      p-1 DMA transfers of c; HBM reads (p-1) c (what it sends), writes (p-1) c
                  (what it receives)
  reduce-scatter  p DMA transfers of c (p-1 sent, the last reduction local); HBM reads
                  c + 2 c (p-2) + 2 c (the first chunk alone, then the received partial and
                  the local chunk at each step), writes p c
  all-reduce      reduce-scatter then all-gather on the same S
  send/recv       one transfer of S: the sender reads S, the receiver writes S
  all-to-all      each rank's DMA sends what it sends; it reads that and the receiver writes it

The totals are the same whether the chunks travel a ring or go to every peer at once (mesh):
an algorithm changes the links and the number of steps, not the bytes each rank's DMA and HBM
handle. A hierarchical collective does this per level on that level's share of the data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Movement:
    """Bytes one rank's DMA engines write and its HBM reads and writes during a collective."""

    dma: float
    read: float
    write: float

    def __add__(self, other: "Movement") -> "Movement":
        return Movement(self.dma + other.dma, self.read + other.read, self.write + other.write)

    @property
    def hbm(self) -> float:
        return self.read + self.write

    @property
    def read_fraction(self) -> float:
        return self.read / self.hbm if self.hbm > 0 else 0.5


NONE = Movement(0.0, 0.0, 0.0)


def gather(p: int, S: float) -> Movement:
    c = S / p
    return Movement((p - 1) * c, (p - 1) * c, (p - 1) * c)


def scatter_reduce(p: int, S: float) -> Movement:
    c = S / p
    return Movement(p * c, (c + 2 * c * (p - 2) + 2 * c) if p > 1 else 0.0, p * c if p > 1 else 0.0)


def movement(kind: str, p: int, S: float) -> Movement:
    """One rank's DMA and HBM bytes for `kind` over p ranks of S bytes each (single level)."""
    if p < 2:
        return NONE
    if kind == "all_gather":
        return gather(p, S)
    if kind == "reduce_scatter":
        return scatter_reduce(p, S)
    if kind == "all_reduce":
        return scatter_reduce(p, S) + gather(p, S)
    raise ValueError(kind)


def hierarchical_movement(kind: str, levels: list[int], S: float) -> Movement:
    """Per level (innermost first) the level's members on its share S_i = S / prod(inner levels)."""
    total, s = NONE, float(S)
    for n in levels:
        total = total + movement(kind, n, s)
        s /= n
    return total
