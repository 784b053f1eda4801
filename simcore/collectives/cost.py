"""Collective algorithms over a topology: alpha-beta costs per link tier, bounded by the ranks'
collective DMA and the chips' HBM (`movement.py`).

For p ranks, a message of S bytes per rank, per-message latency a and per-direction
bandwidth B of the tier the algorithm's transfers cross (shared/reference/trn3-hardware.md):

  ring          all-reduce 2(p-1) steps of S/p to the ring neighbour: 2(p-1) a + 2(p-1)/p S/B;
                all-gather / reduce-scatter (p-1) steps: (p-1) a + (p-1)/p S/B. The ring visits a
                chip's ranks one after another; on a switch it follows chip order (few tier
                crossings), on a torus it snakes through the rows (neighbour hops). A step is as
                slow as its busiest chip (a chip's ranks share its tiers).
  mesh          direct, on a switch: every rank sends S/p to every peer at once (all-reduce =
                reduce-scatter then all-gather); messages are issued one after another
                (sum of their a) and move concurrently over every tier, so the time is the
                busiest tier's bytes over its bandwidth: (p-1) a + (p-1)/p S/B on one tier.
                All-to-all is always mesh (on a torus its messages travel several hops).
  hierarchical  the group splits into chips (their ranks), servers, racks (rows then columns on
                a torus): reduce-scatter inside each level, all-reduce across the top level on
                S/prod(n), all-gather back. Per level i with n_i members and S_i = S / prod(n_j,
                j < i): latency 2(n_i-1) a_i, transfer T_i = 2(n_i-1)/n_i S_i / B_i x the ranks
                of a chip (factor 1 for all-gather / reduce-scatter). Chunked (cc.chunk_bytes) and
                pipelined on a switch: time = sum latency + max T_i + (sum T_i - max T_i) /
                chunks; on a torus both dimensions' links run at once: max T_i.
  p2p           send/recv: a + S/B over the pair's tier.

Every algorithm's transfer is then bounded by the DMA its ranks' collective engines move and
the HBM bytes they read and write (movement.py), per chip: whichever of links, DMA and HBM is
slowest sets it.

Bus bandwidth = algorithm bandwidth (S / time) x 2(p-1)/p for all-reduce and (p-1)/p
otherwise (1 for send/recv), so a large message's bus bandwidth approaches its bottleneck's and
a small one is latency bound. `auto` takes the fastest applicable algorithm on an idle system
(ties: ring, mesh, hierarchical), as NCCL's tuner does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simcore.collectives.movement import Movement, hierarchical_movement, movement
from simcore.errors import ConfigError
from simcore.topology import Topology

ALGORITHMS = ("auto", "ring", "mesh", "hierarchical")
STEP_OPCODE = {"all_reduce": ("CcReduceScatter", "CcAllGather"), "all_gather": ("CcAllGather",),
               "reduce_scatter": ("CcReduceScatter",), "all_to_all": ("CcAllToAll",)}


def bus_factor(kind: str, p: int) -> float:
    if kind == "send_recv":
        return 1.0
    return (2.0 if kind == "all_reduce" else 1.0) * (p - 1) / p


@dataclass
class CollectivePlan:
    """How one collective runs: per rank its latency, idle transfer time and link demand.

    `coupled` ranks progress together (ring, mesh and hierarchical reductions: every rank
    waits for the slowest link); otherwise (all-to-all, send/recv) each rank finishes when
    its own traffic is through."""

    kind: str
    algorithm: str
    group: tuple[int, ...]          # ranks (logical cores), in rank order
    nbytes: np.ndarray              # S per rank (int64)
    latency: np.ndarray             # ns per rank
    transfer: np.ndarray            # ns per rank on an idle system
    demand_out: np.ndarray          # (ranks, tiers + 2) bytes each rank sends through each tier, then the bytes
                                    # its DMA moves and its HBM reads and writes (Topology.dma, .hbm columns)
    demand_in: np.ndarray           # (ranks, tiers + 2) bytes each rank receives (0 in the DMA and HBM columns)
    coupled: bool
    steps: list = field(default_factory=list, repr=False)  # per rank: [(opcode, bytes, idle ns)] (filled on demand)
    hbm_read: float = 0.5           # share of the HBM bytes that are reads
    _topo: Topology | None = field(default=None, repr=False)
    _matrix: np.ndarray | None = field(default=None, repr=False)

    @property
    def ranks(self) -> int:
        return len(self.group)

    def position(self, rank: int) -> int:
        """Where `rank` is in the group (a dict built on first use: groups hold up to thousands of ranks)."""
        pos = self.__dict__.get("_position")
        if pos is None:
            pos = self.__dict__["_position"] = {r: i for i, r in enumerate(self.group)}
        return pos[rank]

    @property
    def idle_ns(self) -> np.ndarray:
        """Duration per rank on an idle system (latency + transfer)."""
        return self.latency + self.transfer

    @property
    def bus_factor(self) -> float:
        return bus_factor(self.kind, self.ranks)

    def rank_steps(self, r: int) -> list[tuple[str, float, float]]:
        """The collective engine's instruction stream for rank r: (opcode, bytes, idle ns)."""
        return _steps(self, r)


def _uniform_plan(kind: str, algorithm: str, group: tuple[int, ...], nbytes: int, L: float, W: float,
                  d_out: np.ndarray, d_in: np.ndarray, topo: Topology) -> CollectivePlan:
    p = len(group)
    return CollectivePlan(kind, algorithm, group, np.full(p, nbytes, np.int64), np.full(p, L), np.full(p, W),
                          d_out, d_in, True, _topo=topo)


def _on_hardware(plan: CollectivePlan, topo: Topology, dma: np.ndarray, read: np.ndarray,
                 write: np.ndarray) -> CollectivePlan:
    """Add each rank's DMA and HBM bytes to its demand and bound the transfer by them: a chip's ranks
    share its collective DMA and its HBM, so the busiest chip sets the time (per rank when the
    ranks are not coupled)."""
    p = plan.ranks
    hbm = read + write
    plan.demand_out = np.c_[plan.demand_out, dma, hbm]
    plan.demand_in = np.c_[plan.demand_in, np.zeros((p, 2))]
    plan.hbm_read = float(read.sum() / hbm.sum()) if hbm.sum() > 0 else 0.5
    chips = np.asarray(plan.group, np.int64) // topo.per_chip
    _, inv = np.unique(chips, return_inverse=True)
    per_chip = (topo.chip_load(plan.group, np.c_[dma, hbm]) / topo.capacity[[topo.dma, topo.hbm]]).max(axis=1)
    t = per_chip[inv]
    plan.transfer = np.maximum(plan.transfer, t.max() if plan.coupled else t)
    return plan


def _uniform_movement(plan: CollectivePlan, topo: Topology, m: Movement) -> CollectivePlan:
    p = plan.ranks
    return _on_hardware(plan, topo, np.full(p, m.dma), np.full(p, m.read), np.full(p, m.write))


def ring(topo: Topology, kind: str, group: tuple[int, ...], nbytes: int) -> CollectivePlan:
    order = topo.ring_order(group)
    p = len(order)
    n_steps = 2 * (p - 1) if kind == "all_reduce" else p - 1
    chunk = nbytes / p
    T = len(topo.tiers)
    hop = np.zeros((p, T))
    alpha = np.zeros(p)
    for i, c in enumerate(order):
        nxt = order[(i + 1) % p]
        hop[i] = topo.demand(c, nxt, chunk)
        alpha[i] = topo.latency(c, nxt)
    # a step is as slow as its busiest chip: the ranks of a chip share its tiers
    step_bw = float((topo.chip_load(order, hop) / topo.bandwidth).max())
    L = n_steps * float(alpha.max())
    W = n_steps * step_bw
    # rank order of the result follows `group` (sorted ranks): map ring position -> group index
    pos = {c: i for i, c in enumerate(order)}
    idx = np.array([pos[c] for c in group])
    prev = (idx - 1) % p
    d_out = n_steps * hop[idx]
    d_in = n_steps * hop[prev]
    plan = _uniform_plan(kind, "ring", group, nbytes, L, W, d_out, d_in, topo)
    return _uniform_movement(plan, topo, movement(kind, p, nbytes))


def _mesh_matrix(topo: Topology, kind: str, group: tuple[int, ...], matrix: np.ndarray) -> CollectivePlan:
    """Direct algorithm: rank r sends matrix[r, q] bytes to each peer q (per phase)."""
    p = len(group)
    phases = 2 if kind == "all_reduce" else 1
    lat_pq, hops = topo.pairs(group)
    lat = phases * lat_pq.sum(axis=1)
    per_pair = hops * matrix[:, :, None]                    # (p, p, tiers) bytes on each tier
    d_out = phases * per_pair.sum(axis=1)
    d_in = phases * per_pair.sum(axis=0)
    # each rank's traffic goes through its chip's tiers, shared with the chip's other ranks
    chips = np.asarray(group, np.int64) // topo.per_chip
    _, inv = np.unique(chips, return_inverse=True)
    chip_t = (np.maximum(topo.chip_load(group, d_out), topo.chip_load(group, d_in)) / topo.bandwidth).max(axis=1)
    W = chip_t[inv]
    coupled = kind != "all_to_all"
    if coupled:
        lat = np.full(p, lat.max())
        W = np.full(p, W.max())
    return CollectivePlan(kind, "mesh", group, np.zeros(p, np.int64), lat, W, d_out, d_in, coupled, _topo=topo,
                          _matrix=matrix)


def mesh(topo: Topology, kind: str, group: tuple[int, ...], nbytes: int) -> CollectivePlan:
    p = len(group)
    m = np.full((p, p), nbytes / p)
    np.fill_diagonal(m, 0.0)
    plan = _mesh_matrix(topo, kind, group, m)
    plan.nbytes = np.full(p, nbytes, np.int64)
    return _uniform_movement(plan, topo, movement(kind, p, nbytes))


def all_to_all(topo: Topology, group: tuple[int, ...], matrix: np.ndarray) -> CollectivePlan:
    """All-to-all with matrix[r, q] bytes from rank r to rank q (the diagonal stays local).
    Each rank's S is its whole send buffer, its own share included."""
    m = np.asarray(matrix, np.float64)
    off = m * (1 - np.eye(len(group)))
    plan = _mesh_matrix(topo, "all_to_all", group, off)
    plan.nbytes = np.rint(m.sum(axis=1)).astype(np.int64)
    plan._matrix = m
    sent, received = off.sum(axis=1), off.sum(axis=0)   # each rank's DMA sends; the receiver's HBM takes it
    return _on_hardware(plan, topo, sent, sent, received)


def hierarchical(topo: Topology, kind: str, group: tuple[int, ...], nbytes: int) -> CollectivePlan | None:
    levels = topo.levels(group)
    if levels is None:
        return None
    p = len(group)
    factor = 2.0 if kind == "all_reduce" else 1.0
    T = len(topo.tiers)
    s = float(nbytes)
    lat = 0.0
    times = []
    d = np.zeros(T)
    per_chip = p // len({topo.chip_of(r) for r in group})   # every rank of a chip runs each level at once
    for n, tier in levels:
        moved = factor * (n - 1) / n * s
        lat += factor * (n - 1) * topo.tiers[tier].latency_ns
        times.append(per_chip * moved / topo.tiers[tier].bandwidth_gbps)
        d[tier] += moved
        s /= n
    chunks = max(1, -(-int(nbytes) // int(topo.chunk_bytes)))
    # the levels pipeline over chunks; on a torus the two dimensions' links run at once (half the data
    # goes x then y, half y then x), so only the busier dimension counts
    fill = 0.0 if topo.kind == "torus2d" else (sum(times) - max(times)) / chunks
    W = max(times) + fill
    d_out = np.tile(d, (p, 1))
    plan = _uniform_plan(kind, "hierarchical", group, nbytes, lat, W, d_out, d_out.copy(), topo)
    plan._matrix = np.array([[n, t] for n, t in levels], np.int64)
    return _uniform_movement(plan, topo, hierarchical_movement(kind, [n for n, _ in levels], nbytes))


def send_recv(topo: Topology, src: int, dst: int, nbytes: int) -> CollectivePlan:
    T = len(topo.tiers)
    d = topo.demand(src, dst, float(nbytes))
    W = float((d / topo.bandwidth).max()) if T else 0.0
    L = topo.latency(src, dst)
    d_out = np.zeros((2, T))
    d_in = np.zeros((2, T))
    d_out[0] = d
    d_in[1] = d
    plan = CollectivePlan("send_recv", "p2p", (src, dst), np.full(2, nbytes, np.int64), np.full(2, L), np.full(2, W),
                          d_out, d_in, True, _topo=topo)
    S = float(nbytes)   # the sender's DMA reads S from its HBM and writes it into the receiver's
    return _on_hardware(plan, topo, np.array([S, 0.0]), np.array([S, 0.0]), np.array([0.0, S]))


def plan_collective(topo: Topology, kind: str, group: tuple[int, ...], nbytes: int,
                    algorithm: str = "auto") -> CollectivePlan:
    """The plan of an all-reduce, all-gather or reduce-scatter of `nbytes` per rank over `group`.

    `algorithm` is a preference: where it does not apply (hierarchical over one server, mesh
    on a torus) the fastest applicable one is used."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown collective algorithm '{algorithm}'; choose one of {', '.join(ALGORITHMS)}.")
    group = tuple(int(c) for c in group)
    candidates: list[CollectivePlan] = [ring(topo, kind, group, nbytes)]
    if topo.kind == "switch":
        candidates.append(mesh(topo, kind, group, nbytes))
    h = hierarchical(topo, kind, group, nbytes)
    if h is not None:
        candidates.append(h)
    if algorithm != "auto":
        forced = [c for c in candidates if c.algorithm == algorithm]
        if forced:
            return forced[0]
    best = candidates[0]
    for c in candidates[1:]:
        if float(c.idle_ns.max()) < float(best.idle_ns.max()) * (1 - 1e-9):
            best = c
    return best


def _steps(plan: CollectivePlan, r: int) -> list[tuple[str, float, float]]:
    topo = plan._topo
    p = plan.ranks
    if plan.kind == "send_recv":
        return [("CcSend" if r == 0 else "CcRecv", float(plan.nbytes[r]), float(plan.idle_ns[r]))]
    ops = STEP_OPCODE[plan.kind]
    if plan.algorithm == "ring":
        n = p - 1
        step = float(plan.idle_ns[r]) / (n * len(ops))
        return [(op, float(plan.nbytes[r]) / p, step) for op in ops for _ in range(n)]
    if plan.algorithm == "hierarchical":
        out = []
        levels = [tuple(x) for x in plan._matrix]
        s = float(plan.nbytes[r])
        down = []
        for n, tier in levels:
            t = topo.tiers[tier]
            down.append((n, t, s))
            s /= n
        first = ops[0]
        for n, t, s_i in down:  # reduce-scatter (or gather) down the levels
            out += [(first, s_i / n, t.latency_ns + s_i / n / t.bandwidth_gbps)] * (n - 1)
        if len(ops) > 1:
            for n, t, s_i in reversed(down):
                out += [(ops[1], s_i / n, t.latency_ns + s_i / n / t.bandwidth_gbps)] * (n - 1)
        return out
    # mesh: one message per peer and phase
    m = plan._matrix
    lat, hops = topo.pairs(plan.group)
    nb = m[r] if m is not None else np.full(p, float(plan.nbytes[r]) / p)
    t = lat[r] + ((hops[r] * nb[:, None]) / topo.bandwidth).max(axis=1)
    peers = [j for j in range(p) if j != r]
    return [(op, float(nb[j]), float(t[j])) for op in ops for j in peers]
