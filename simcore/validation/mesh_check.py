"""The runtime's documented small-message all-gathers on a torus preset's cited resources.

`python -m simcore.validation.mesh_check [-H trn1.32xlarge] [-r 32]` prints, for the sizes of the
nccom-test all-gather series in docs/validation.md, what the two algorithms the Neuron runtime
documents for a 2-D torus (neuron-runtime/explore/intranode-collective-comm.rst) would take if each
of their physical costs were paid at the preset's cited rate:

  Mesh  step 0: every chip writes its local ranks' chunks to the other chips over routed paths
        (dimension-ordered, X then Y); step 1: an intra-chip broadcast. Costs checked one by one:
        (a) the busiest link direction's chunks (hop counts summed; distance-2 ties split evenly
        or all one way), (b) a rank's DMA bytes per step at its collective DMA rate, also with the
        transit chunks relayed by the intermediate chips' DMA, (c) the chip's HBM reads and
        writes, (d) one step latency per step.
  RDH   ranks of one in-chip index exchange over the torus seen as a hypercube (one axis, one link
        a step, log2(chips) steps, the data doubling), then the intra-chip broadcast.

This is a diagnostic of the validation report, not part of the simulator: nothing here is fitted and
no capture uses it. It exists so that the figures quoted in the all-gather case's note can be
reproduced from the presets rather than read on trust.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

from simcore.errors import UserError
from simcore.hardware.spec import load_hardware
from simcore.topology import topology_of

SIZES = (1024, 8192, 65536, 524288)     # the nccom-test series (bytes gathered per rank)


@dataclass(frozen=True)
class Resources:
    """What the preset cites: a link's bandwidth per direction, a rank's collective DMA, a chip's HBM,
    the step latency, the torus and the ranks per chip; and the sum of the shortest-route hop counts
    from one chip to all the others, by the simulator's own routing (`Topology.pairs`)."""

    link_gbps: float
    rank_dma_gbps: float
    hbm_gbps: float
    step_ns: float
    dims: tuple[int, int]
    per_chip: int
    hop_sum: int


def resources(hardware: str, ranks: int) -> Resources:
    if ranks < 2:
        raise UserError(f"an all-gather needs at least 2 ranks (got {ranks}).")
    topo = topology_of(load_hardware(hardware), ranks=ranks)
    if topo.kind != "torus2d" or topo.chips != topo.dims[0] * topo.dims[1] or ranks != topo.chips * topo.per_chip:
        raise UserError(f"{hardware} with {ranks} ranks is not a whole 2-D torus: the Mesh and RDH checks need every "
                        "chip of a torus preset (trn1.32xlarge: 32 ranks, trn2.48xlarge: 64).")
    x = topo.tiers[0]
    _, hops = topo.pairs(tuple(range(0, ranks, topo.per_chip)))  # one rank a chip: (chips, chips, tiers)
    return Resources(x.bandwidth_gbps / max(1, x.links), topo.rank_dma_gbps, topo.hbm_gbps, x.latency_ns,
                     topo.dims, topo.per_chip, int(hops[0, :, :2].sum()))  # the X and Y tiers' hops


def _ring_moves(a: int, b: int, n: int, tie: int) -> list[int]:
    d = (b - a) % n
    if d == 0:
        return []
    if d < n - d or (d == n - d and tie > 0):
        return [1] * d
    return [-1] * (n - d)


def busiest_link_chunks(dims: tuple[int, int], chunks_per_chip: int, split_ties: bool) -> float:
    """Chunks on the busiest link direction when every chip sends `chunks_per_chip` chunks to every other
    chip along X-then-Y routes (distance-2 ties split evenly between the two ways, or all one way)."""
    dx, dy = dims
    load: dict[tuple, float] = {}
    ties = ((1, 0.5), (-1, 0.5)) if split_ties else ((1, 1.0),)
    for sx, sy in ((x, y) for y in range(dy) for x in range(dx)):
        for tx, ty in ((x, y) for y in range(dy) for x in range(dx)):
            if (sx, sy) == (tx, ty):
                continue
            for tie, w in ties:
                x, y = sx, sy
                for m in _ring_moves(sx, tx, dx, tie):
                    load[(x, y, "x", m)] = load.get((x, y, "x", m), 0.0) + chunks_per_chip * w
                    x = (x + m) % dx
                for m in _ring_moves(sy, ty, dy, tie):
                    load[(x, y, "y", m)] = load.get((x, y, "y", m), 0.0) + chunks_per_chip * w
                    y = (y + m) % dy
    return max(load.values())


@dataclass(frozen=True)
class MeshCosts:
    link_ns: tuple[float, float]      # busiest link direction, ties split / one way
    dma_step0_ns: float               # a rank's writes to its share of the other chips
    dma_step0_relay_ns: float         # the same plus its chip's share of the transit chunks
    dma_step1_ns: float               # the intra-chip broadcast
    hbm_ns: float                     # a chip's reads and writes over both steps
    latency_ns: float                 # two steps

    @property
    def fastest_ns(self) -> float:
        """Steps one after another, resources inside a step at once, the best case of each."""
        return self.latency_ns + max(self.link_ns[0], self.dma_step0_ns) + self.dma_step1_ns

    @property
    def slowest_ns(self) -> float:
        """The worst case of each cost, the documented top of the step latency (2 us, 'about 1-2 us')."""
        return (2 * self.latency_ns + max(self.link_ns[1], self.dma_step0_relay_ns, self.hbm_ns)
                + self.dma_step1_ns)


def mesh(res: Resources, nbytes: int, ranks: int) -> MeshCosts:
    chips = res.dims[0] * res.dims[1]
    k = res.per_chip
    c = nbytes / ranks                                    # one rank's chunk
    others = chips - 1
    link = tuple(busiest_link_chunks(res.dims, k, s) * c / res.link_gbps for s in (True, False))
    own = others * k * c / k                              # a rank writes its chip's k chunks to others / k chips
    transit = (k * res.hop_sum - k * others) * c / k   # chunk-hops past the first, per rank
    step1 = chips * c * (k - 1)                           # what a rank received, to its k - 1 neighbours
    hbm = 4 * others * k * c                              # per chip: read and write in each step
    return MeshCosts((link[0], link[1]), own / res.rank_dma_gbps, (own + transit) / res.rank_dma_gbps,
                     step1 / res.rank_dma_gbps, hbm / res.hbm_gbps, 2 * res.step_ns)


def rdh(res: Resources, nbytes: int, ranks: int) -> float:
    """Recursive doubling over log2(chips) hypercube axes (one link each, shared by the chip's k ranks),
    then the intra-chip broadcast; one step latency per step."""
    chips = res.dims[0] * res.dims[1]
    k = res.per_chip
    c = nbytes / ranks
    steps = int(round(math.log2(chips)))
    inter = sum(max(k * 2**i * c / res.link_gbps, 2**i * c / res.rank_dma_gbps) for i in range(steps))
    intra = chips * c * (k - 1) / res.rank_dma_gbps
    return (steps + (1 if k > 1 else 0)) * res.step_ns + inter + intra


def report(hardware: str = "trn1.32xlarge", ranks: int = 32, sizes: tuple[int, ...] = SIZES) -> str:
    res = resources(hardware, ranks)
    lines = [f"{hardware}, {ranks} ranks ({res.per_chip} a chip, {res.dims[0]}x{res.dims[1]} torus): link "
             f"{res.link_gbps:.1f} GB/s a direction, rank collective DMA {res.rank_dma_gbps:.1f} GB/s, HBM "
             f"{res.hbm_gbps:.0f} GB/s, step {res.step_ns / 1e3:g} us; hop sum per chip {res.hop_sum}",
             f"{'bytes':>8} {'links':>13} {'DMA s0':>6} {'+relay':>6} {'DMA s1':>6} {'HBM':>5} "
             f"{'Mesh':>13} {'RDH':>6}  (us)"]
    for s in sizes:
        m = mesh(res, s, ranks)
        lines.append(f"{s:>8} {m.link_ns[0] / 1e3:>6.2f}-{m.link_ns[1] / 1e3:<6.2f} {m.dma_step0_ns / 1e3:>6.2f} "
                     f"{m.dma_step0_relay_ns / 1e3:>6.2f} {m.dma_step1_ns / 1e3:>6.2f} {m.hbm_ns / 1e3:>5.2f} "
                     f"{m.fastest_ns / 1e3:>6.2f}-{m.slowest_ns / 1e3:<6.2f} {rdh(res, s, ranks) / 1e3:>6.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simcore.validation.mesh_check", description=__doc__.splitlines()[0])
    p.add_argument("-H", "--hardware", default="trn1.32xlarge")
    p.add_argument("-r", "--ranks", type=int, default=32)
    args = p.parse_args(argv)
    try:
        print(report(args.hardware, args.ranks))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
