"""Topologies from hardware presets: switched tiers (Trn3 UltraServer) or a 2D torus (trn2.48xlarge).

Bandwidth is per chip and per direction: a chip can send at a tier's bandwidth and receive
at it at the same time (links are full duplex). Presets give the published bidirectional
figure per tier (`bidirectional_gbps`); a tier's per-direction bandwidth is half of it.
A preset without a `[topology]` section (a single chip, `trn3`) is a flat switch whose one
tier offers the chip's `link.bandwidth_gbps` per direction at `link.latency_ns` -- what the
collective micro-benchmarks have always used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from simcore.errors import ConfigError

KINDS = ("switch", "torus2d")
MAX_FLAT_CHIPS = 1024
DEFAULT_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Tier:
    """One class of links: what a chip gets per direction through it, and its per-message latency."""

    name: str
    links: int
    bandwidth_gbps: float     # per chip, per direction (GB/s = bytes/ns)
    latency_ns: float         # alpha: cost of one step or message through this tier

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "links": self.links, "bandwidth_gbps": self.bandwidth_gbps,
                "latency_ns": self.latency_ns}


@dataclass(frozen=True)
class Topology:
    """The ranks of a capture, the chips they sit on, and the tier each pair of ranks talks through.

    A rank is a logical NeuronCore (`--lnc` physical cores): `per_chip` of them share a chip, rank r on
    chip r // per_chip. Ranks of one chip talk through the chip's own memory (the `on-chip` tier, the
    last one when per_chip > 1); ranks of different chips through the chip-to-chip tiers, whose
    bandwidth every rank of a chip shares."""

    name: str
    kind: str                                  # switch | torus2d
    chips: int                                 # chips in use (a capture may take part of a system)
    tiers: tuple[Tier, ...]
    chips_per_server: int = 1
    servers_per_rack: int = 1
    dims: tuple[int, int] = (0, 0)             # torus2d: (x, y)
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    flat: bool = False                         # a single-chip preset standing in for a flat switch
    system_chips: int = field(default=0)       # chips of the whole system (the preset's)
    per_chip: int = 1                          # ranks (logical cores) per chip
    ranks: int = 0                             # ranks in use (default: chips x per_chip)
    lnc: int = 1                               # physical cores per rank
    rank_dma_gbps: float = 0.0                 # what a rank's DMA engines move for collectives (0: no limit)
    hbm_gbps: float = 0.0                      # a chip's HBM bandwidth, collectives' reads and writes (0: no limit)
    _pair_cache: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    # -- resources beside the links: the chip's collective DMA and its HBM --------------
    @property
    def dma(self) -> int:
        """Column of the chip's collective DMA in demand arrays (after the tiers)."""
        return len(self.tiers)

    @property
    def hbm(self) -> int:
        """Column of the chip's HBM in demand arrays."""
        return len(self.tiers) + 1

    @cached_property
    def capacity(self) -> np.ndarray:
        """Per chip, bytes/ns of every column of a demand array: each tier per direction, the
        chip's collective DMA (its ranks' together) and its HBM. A zero rate (a preset without
        them) is no limit."""
        big = 1e12
        dma = self.rank_dma_gbps * self.per_chip or big
        return np.r_[self.bandwidth, dma, self.hbm_gbps or big]

    # -- placement -----------------------------------------------------------------------
    @property
    def onchip(self) -> int:
        """Index of the on-chip tier, or -1 when a chip holds one rank."""
        return len(self.tiers) - 1 if self.per_chip > 1 else -1

    @property
    def link_tiers(self) -> int:
        """Chip-to-chip tiers (the on-chip tier, if any, comes after them)."""
        return len(self.tiers) - (1 if self.per_chip > 1 else 0)

    def chip_of(self, rank: int) -> int:
        return rank // self.per_chip

    def lcore_of(self, rank: int) -> int:
        """The rank's logical core on its chip."""
        return rank % self.per_chip

    def server(self, chip: int) -> int:
        return chip // self.chips_per_server

    def rack(self, chip: int) -> int:
        return chip // (self.chips_per_server * self.servers_per_rack)

    def coords(self, chip: int) -> tuple[int, int]:
        dx = self.dims[0]
        return chip % dx, chip // dx

    def _chip_route(self, a: int, b: int) -> list[tuple[int, int]]:
        if self.kind == "torus2d":
            (ax, ay), (bx, by) = self.coords(a), self.coords(b)
            dx, dy = self.dims
            hx = min((ax - bx) % dx, (bx - ax) % dx)
            hy = min((ay - by) % dy, (by - ay) % dy)
            return [(t, h) for t, h in ((0, hx), (1, hy)) if h]
        if self.server(a) == self.server(b):
            tier = 0
        elif self.rack(a) == self.rack(b):
            tier = 1
        else:
            tier = 2
        return [(min(tier, self.link_tiers - 1), 1)]

    def route(self, a: int, b: int) -> list[tuple[int, int]]:
        """The (tier, link hops) a byte from rank a to rank b crosses."""
        if a == b:
            return []
        ca, cb = self.chip_of(a), self.chip_of(b)
        if ca == cb:
            return [(self.onchip, 1)]
        return self._chip_route(ca, cb)

    @cached_property
    def _alpha(self) -> np.ndarray:
        return np.array([t.latency_ns for t in self.tiers], np.float64)

    @cached_property
    def bandwidth(self) -> np.ndarray:
        """Per-direction bandwidth of each tier per chip, bytes/ns."""
        return np.array([t.bandwidth_gbps for t in self.tiers], np.float64)

    def latency(self, a: int, b: int) -> float:
        """Alpha of one message from rank a to rank b: its slowest tier's, once per link hop on a torus."""
        r = self.route(a, b)
        if not r:
            return 0.0
        if self.kind == "torus2d":
            return float(sum(self._alpha[t] * h for t, h in r))
        return float(max(self._alpha[t] for t, _ in r))

    def demand(self, a: int, b: int, nbytes: float) -> np.ndarray:
        """Bytes per tier that `nbytes` from rank a to rank b put on a's (and b's) chip."""
        out = np.zeros(len(self.tiers))
        for t, h in self.route(a, b):
            out[t] += nbytes * h
        return out

    def chip_load(self, group: tuple[int, ...], demand: np.ndarray) -> np.ndarray:
        """Per-rank bytes per tier (ranks of `group`, tiers) summed over the ranks of each chip:
        (chips of the group, tiers). The ranks of a chip share its tiers."""
        chips = np.asarray(group, np.int64) // self.per_chip
        _, inv = np.unique(chips, return_inverse=True)
        out = np.zeros((int(inv.max()) + 1 if len(inv) else 0, demand.shape[1]))
        np.add.at(out, inv, demand)
        return out

    def pairs(self, group: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """For every ordered pair of the group's ranks: the message latency (p, p) and the link hops
        per tier (p, p, tiers) -- `demand` and `latency` for all pairs at once (cached per group)."""
        key = tuple(group)
        hit = self._pair_cache.get(key)
        if hit is not None:
            return hit
        g = np.asarray(key, np.int64) // self.per_chip
        p, T = len(g), len(self.tiers)
        hops = np.zeros((p, p, T))
        same = g[:, None] == g[None, :]
        if self.kind == "torus2d":
            dx, dy = self.dims
            x, y = g % dx, g // dx
            ax = np.abs(x[:, None] - x[None, :])
            ay = np.abs(y[:, None] - y[None, :])
            hops[..., 0] = np.minimum(ax, dx - ax)
            hops[..., 1] = np.minimum(ay, dy - ay)
            lat = (hops * self._alpha).sum(axis=2)
        else:
            srv = g // self.chips_per_server
            rack = g // (self.chips_per_server * self.servers_per_rack)
            tier = np.where(srv[:, None] == srv[None, :], 0, np.where(rack[:, None] == rack[None, :], 1, 2))
            tier = np.minimum(tier, self.link_tiers - 1)
            hops[np.arange(p)[:, None], np.arange(p)[None, :], tier] = 1.0
            lat = self._alpha[tier]
        lat = np.array(lat, np.float64)
        if self.per_chip > 1:
            hops[same] = 0.0
            hops[same, self.onchip] = 1.0
            lat[same] = self._alpha[self.onchip]
        idx = np.arange(p)
        hops[idx, idx] = 0.0
        lat[idx, idx] = 0.0
        if len(self._pair_cache) > 256:
            self._pair_cache.clear()
        self._pair_cache[key] = (lat, hops)
        return lat, hops

    def _chip_ring(self, chips: list[int]) -> list[int]:
        if self.kind != "torus2d":
            return sorted(chips)
        rows: dict[int, list[int]] = {}
        for c in sorted(chips):
            rows.setdefault(self.coords(c)[1], []).append(c)
        out: list[int] = []
        for i, y in enumerate(sorted(rows)):
            out += rows[y] if i % 2 == 0 else rows[y][::-1]
        return out

    def ring_order(self, group: tuple[int, ...]) -> tuple[int, ...]:
        """The order a ring visits the group: the ranks of a chip one after another, chips in chip order
        on a switch (few tier crossings) and in a snake through the rows on a torus (neighbour hops)."""
        by_chip: dict[int, list[int]] = {}
        for r in sorted(group):
            by_chip.setdefault(self.chip_of(r), []).append(r)
        return tuple(r for c in self._chip_ring(list(by_chip)) for r in by_chip[c])

    def levels(self, group: tuple[int, ...]) -> list[tuple[int, int]] | None:
        """The group's hierarchy as [(members per unit, tier)] from the innermost level out -- the ranks
        of a chip, then servers and racks (or torus rows, then columns) -- or None when it does not
        split evenly into two or more levels."""
        by_chip: dict[int, int] = {}
        for r in group:
            by_chip[self.chip_of(r)] = by_chip.get(self.chip_of(r), 0) + 1
        if len(set(by_chip.values())) != 1:
            return None
        outer = self._chip_levels(sorted(by_chip))
        if outer is None:
            return None
        k = next(iter(by_chip.values()))
        out = ([(k, self.onchip)] if k > 1 else []) + outer
        return out if len(out) >= 2 else None

    def _chip_levels(self, g: list[int]) -> list[tuple[int, int]] | None:
        """Levels of a set of chips (members > 1 only), or None when they do not split evenly."""
        if len(g) == 1:
            return []
        if self.kind == "torus2d":
            xs = sorted({self.coords(c)[0] for c in g})
            ys = sorted({self.coords(c)[1] for c in g})
            if len(xs) * len(ys) != len(g):
                return None
            return [(n, t) for n, t in ((len(xs), 0), (len(ys), 1)) if n > 1]
        per_server: dict[int, int] = {}
        for c in g:
            per_server[self.server(c)] = per_server.get(self.server(c), 0) + 1
        if len(set(per_server.values())) != 1:
            return None
        servers_per_rack: dict[int, int] = {}
        for s in per_server:
            r = s // self.servers_per_rack
            servers_per_rack[r] = servers_per_rack.get(r, 0) + 1
        if len(set(servers_per_rack.values())) != 1:
            return None
        sizes = [(next(iter(per_server.values())), 0), (next(iter(servers_per_rack.values())), 1),
                 (len(servers_per_rack), 2)]
        return [(n, min(t, self.link_tiers - 1)) for n, t in sizes if n > 1]

    def describe(self) -> dict[str, Any]:
        """For meta.json `capture.topology` and UIs."""
        out: dict[str, Any] = {"name": self.name, "kind": "flat" if self.flat else self.kind, "chips": self.chips,
                               "ranks": self.ranks, "lnc": self.lnc, "ranks_per_chip": self.per_chip,
                               "tiers": [t.to_dict() for t in self.tiers],
                               "rank_cc_dma_gbps": self.rank_dma_gbps, "chip_hbm_gbps": self.hbm_gbps}
        if self.kind == "torus2d":
            out["dims"] = list(self.dims)
        elif not self.flat:
            out["chips_per_server"] = self.chips_per_server
            out["servers_per_rack"] = self.servers_per_rack
        return out


def _number(name: str, where: str, value: Any, *, positive: bool = True, integer: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    if ok and integer:
        ok = isinstance(value, int)
    if not ok or (value <= 0 if positive else value < 0):
        kind = "a positive integer" if integer else ("a positive number" if positive else "a non-negative number")
        raise ConfigError(f"hardware preset '{name}': '{where}' must be {kind} (got {value!r}).")
    return value


def rank_dma_gbps(hw, lnc: int) -> float:
    """Bytes/ns a rank's DMA engines move for collectives: `cc.dma_engines_per_core` of each of its
    physical cores' engines, at the engine rate and the DMA ceiling (`dma.peak_utilization`)."""
    cc = hw.data.get("cc", {}) if isinstance(hw.data.get("cc", {}), dict) else {}
    engines = _number(hw.name, "cc.dma_engines_per_core", cc.get("dma_engines_per_core", 0.0), positive=False)
    dma = hw.data["dma"]
    return float(lnc * engines * float(dma["engine_gbps"]) * float(dma.get("peak_utilization", 1.0)))


def _onchip_tier(hw, cc: dict, lnc: int, per_chip: int) -> Tier:
    """Ranks of one chip exchange data through the chip's memory, moved by their DMA engines: the
    tier offers what the chip's ranks' collective DMA moves, at `cc.onchip_latency_ns` per step
    (default: the link latency)."""
    lat = _number(hw.name, "cc.onchip_latency_ns", cc.get("onchip_latency_ns", hw.data["link"].get("latency_ns", 0.0)),
                  positive=False)
    bw = rank_dma_gbps(hw, lnc) * per_chip or hw.hbm_bytes_per_ns / 2.0
    return Tier("on-chip", 0, bw, float(lat))


def topology_of(hw, ranks: int | None = None, lnc: int | None = None) -> Topology:
    """The topology of a hardware preset for `ranks` logical cores of `lnc` physical cores each
    (default: the preset's LNC and every logical core of every chip); rank r sits on chip
    r // (cores per chip / lnc).

    Raises ConfigError (one sentence) for a malformed `[topology]` section."""
    data = hw.data
    name = hw.name
    lnc = hw.lnc_default if lnc is None else int(lnc)
    per_chip = max(1, hw.cores_per_chip // lnc)
    cc = data.get("cc", {}) if isinstance(data.get("cc", {}), dict) else {}
    chunk = int(_number(name, "cc.chunk_bytes", cc.get("chunk_bytes", DEFAULT_CHUNK_BYTES), integer=True))
    onchip = (_onchip_tier(hw, cc, lnc, per_chip),) if per_chip > 1 else ()
    res = dict(per_chip=per_chip, lnc=lnc, rank_dma_gbps=rank_dma_gbps(hw, lnc), hbm_gbps=hw.hbm_bytes_per_ns)
    topo = data.get("topology")
    link = data["link"]
    if topo is None:  # a single-chip preset: N of its chips on a flat switch at the chip's link bandwidth
        n = -(-ranks // per_chip) if ranks else hw.chips
        r = ranks or n * per_chip
        tier = Tier("link", int(link.get("links", 1)), float(link["bandwidth_gbps"]), float(link.get("latency_ns", 0.0)))
        return Topology(name, "switch", n, (tier,) + onchip, chips_per_server=max(n, 1), servers_per_rack=1,
                        chunk_bytes=chunk, flat=True, system_chips=max(n, 1), ranks=r, **res)
    if not isinstance(topo, dict):
        raise ConfigError(f"hardware preset '{name}': [topology] must be a table.")
    kind = topo.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"hardware preset '{name}': 'topology.kind' must be one of {', '.join(KINDS)} (got {kind!r}).")
    raw = topo.get("tiers")
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise ConfigError(f"hardware preset '{name}' needs [[topology.tiers]] entries (name, links, bidirectional_gbps, latency_ns).")
    tiers = []
    for i, t in enumerate(raw):
        where = f"topology.tiers[{i}]"
        for key in ("name", "links", "bidirectional_gbps", "latency_ns"):
            if key not in t:
                raise ConfigError(f"hardware preset '{name}': '{where}' lacks '{key}'.")
        tiers.append(Tier(str(t["name"]), int(_number(name, f"{where}.links", t["links"], integer=True)),
                          float(_number(name, f"{where}.bidirectional_gbps", t["bidirectional_gbps"])) / 2.0,
                          float(_number(name, f"{where}.latency_ns", t["latency_ns"], positive=False))))
    total = hw.chips
    n = total if not ranks else -(-ranks // per_chip)
    r = ranks or n * per_chip
    if kind == "torus2d":
        dims = topo.get("dims")
        if not (isinstance(dims, list) and len(dims) == 2 and all(isinstance(d, int) and d > 0 for d in dims)):
            raise ConfigError(f"hardware preset '{name}': 'topology.dims' must be two positive integers like [4, 4].")
        if dims[0] * dims[1] != total:
            raise ConfigError(f"hardware preset '{name}': topology.dims {dims[0]}x{dims[1]} does not make its {total} chips.")
        if len(tiers) != 2:
            raise ConfigError(f"hardware preset '{name}': a torus2d topology needs two tiers (x and y links).")
        return Topology(name, kind, n, tuple(tiers) + onchip, dims=(dims[0], dims[1]), chunk_bytes=chunk,
                        system_chips=total, ranks=r, **res)
    cps = int(_number(name, "topology.chips_per_server", topo.get("chips_per_server"), integer=True))
    spr = int(_number(name, "topology.servers_per_rack", topo.get("servers_per_rack", 1), integer=True))
    if total % cps:
        raise ConfigError(f"hardware preset '{name}': {total} chips do not fill servers of {cps}.")
    if len(tiers) > 3:
        raise ConfigError(f"hardware preset '{name}': a switch topology has at most 3 tiers (in-server, in-rack, cross-rack).")
    return Topology(name, kind, n, tuple(tiers) + onchip, chips_per_server=cps, servers_per_rack=spr,
                    chunk_bytes=chunk, system_chips=total, ranks=r, **res)
