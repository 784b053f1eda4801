"""Collectives on the hardware: timings agree with the alpha-beta formulas of the chosen algorithm
(computed here from the preset's numbers) on the slowest of the links, the ranks' collective DMA and
the chips' HBM; bus bandwidth approaches the bottleneck's for large messages and small ones are
latency bound; torus dimensions run at once; overlapping collectives share the links, and
collectives and compute share the HBM."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simcore.collectives.links import LinkLedger
from simcore.hardware import load_hardware

GEN1 = "trn3-ultraserver-gen1"


def tiers(name: str) -> list[tuple[float, float]]:
    """(per-direction bandwidth in bytes/ns, latency ns) of each tier, straight from the preset file."""
    hw = load_hardware(name)
    return [(t["bidirectional_gbps"] / 2, t["latency_ns"]) for t in hw.data["topology"]["tiers"]]


def one(c):
    """The single collective of a micro-benchmark trace: (duration, algorithm, bus bandwidth)."""
    assert c.collective_id.nunique() == 1 and (c.wait_ns == 0).all()
    return int((c.end_ns - c.start_ns).iloc[0]), str(c.algorithm.iloc[0]), float(c.bus_bw_gbps.iloc[0])


def test_tensor_parallel_all_reduce_in_a_server_is_the_ring_formula(cap, one_rank_per_chip):
    """16 chips of one Gen1 server, one rank each: 2(p-1) a + 2(p-1)/p S/B over the in-server tier, for
    the all-reduces a TP=16 model step issues (idle system: nobody waits)."""
    t = cap(hardware=one_rank_per_chip(GEN1), workload="llama3.1-8b", tp=16, layers=1, batch=4)
    (B, a), *_ = tiers(GEN1)
    c = t.to_pandas("collectives")
    ar = c[c.kind == "all_reduce"]
    assert len(ar) and set(ar.group_size) == {16} and set(ar.algorithm) == {"ring"}
    S = 4 * 4096 * 2  # tokens x hidden x bf16
    p = 16
    expected = 2 * (p - 1) * a + 2 * (p - 1) / p * S / B
    got = ar.end_ns - ar.start_ns
    assert np.allclose(got, expected, rtol=0.05)
    assert (ar.wait_ns == 0).all()


@pytest.mark.parametrize("shape", ["1073741824,64", "4096,64"])
def test_hierarchical_all_reduce_across_racks_matches_its_pipelined_formula(cap, one_rank_per_chip, shape):
    """64 chips = 16 per server x 2 servers per rack x 2 racks: reduce-scatter down the levels,
    all-reduce across racks, all-gather back, pipelined over 1 MiB chunks."""
    S, p = (int(x) for x in shape.split(","))
    dur, alg, _ = one(cap(hardware=one_rank_per_chip(GEN1), workload="allreduce", shape=shape).to_pandas("collectives"))
    assert alg == "hierarchical"
    (b0, a0), (b1, a1), (b2, a2) = tiers(GEN1)
    levels = [(16, b0, a0), (2, b1, a1), (2, b2, a2)]
    lat, times, s = 0.0, [], float(S)
    for n, B, a in levels:
        lat += 2 * (n - 1) * a
        times.append(2 * (n - 1) / n * s / B)
        s /= n
    chunks = max(1, math.ceil(S / 2**20))
    expected = lat + max(times) + (sum(times) - max(times)) / chunks
    assert dur == pytest.approx(expected, rel=0.05)


def test_forced_ring_across_racks_runs_at_the_slowest_tier(cap, one_rank_per_chip):
    S = 1 << 28
    dur, alg, busbw = one(cap(hardware=one_rank_per_chip(GEN1), workload="allreduce", shape=f"{S},64", cc_algorithm="ring")
                          .to_pandas("collectives"))
    (_, _), (_, _), (b2, a2) = tiers(GEN1)
    assert alg == "ring"
    assert dur == pytest.approx(2 * 63 * a2 + 2 * 63 / 64 * S / b2, rel=0.05)
    assert busbw == pytest.approx(b2, rel=0.05)  # a large ring approaches its slowest link's bandwidth


@pytest.mark.parametrize("name, factor, steps", [("allgather", 15 / 16, 15), ("reducescatter", 15 / 16, 15),
                                                 ("alltoall", 15 / 16, 15), ("allreduce", 2 * 15 / 16, 30)])
def test_large_messages_approach_the_link_bandwidth_and_small_ones_are_latency_bound(cap, one_rank_per_chip, name,
                                                                                       factor, steps):
    (B, a), *_ = tiers(GEN1)
    big, small = 1 << 30, 1 << 10
    hw = one_rank_per_chip(GEN1)
    dur, _, busbw = one(cap(hardware=hw, workload=name, shape=f"{big},16").to_pandas("collectives"))
    assert dur == pytest.approx(steps * a + factor * big / B, rel=0.05)
    assert 0.95 * B <= busbw <= B * 1.001
    dur, _, busbw = one(cap(hardware=hw, workload=name, shape=f"{small},16").to_pandas("collectives"))
    assert dur == pytest.approx(steps * a, rel=0.05)
    assert busbw < 0.01 * B


def rank_dma(name: str, lnc: int) -> float:
    """Bytes/ns a rank's collective DMA moves: lnc cores x cc.dma_engines_per_core x the sustained engine rate."""
    hw = load_hardware(name)
    d = hw.data["dma"]
    return lnc * hw.data["cc"]["dma_engines_per_core"] * d["engine_gbps"] * d["peak_utilization"]


def test_ring_on_a_trn2_torus_row_is_bound_by_the_ranks_dma(cap, one_rank_per_chip):
    """4 chips of a row of the 4x4 torus, one rank each: the bidirectional ring's links (320 GB/s a
    direction) would take 2(p-1)/p S / B, but every rank's DMA moves (2p-1)/p S (a reduce-scatter's p
    transfers, an all-gather's p-1) at its collective rate, which is slower."""
    S = 1 << 28
    dur, alg, busbw = one(cap(hardware=one_rank_per_chip("trn2.48xlarge"), workload="allreduce", shape=f"{S},4")
                          .to_pandas("collectives"))
    B, a = tiers("trn2.48xlarge")[0]
    R = rank_dma("trn2", 2)
    assert 2 * 3 / 4 * S / B < 7 / 4 * S / R
    assert alg == "ring" and dur == pytest.approx(2 * 3 * a + 7 / 4 * S / R, rel=0.05)
    assert busbw == pytest.approx(R * (2 * 3 / 4) / (7 / 4), rel=0.05)


def test_two_ranks_of_a_trn1_device_all_reduce_at_their_dma_rate(cap):
    """nccom-test -r 2 on a trn1 device (docs/validation.md): the 2 logical cores exchange through the
    device; each rank's DMA moves 1.5 S, so a large all-reduce runs at 1.5 S / R plus two steps, R
    being 5 engines at 17 B/ns (the fitted preset figure); its HBM traffic (3.5 S a rank) shows in
    the HBM counters and no byte crosses a link."""
    S = 1 << 30
    t = cap(hardware="trn1", workload="allreduce", shape=f"{S},2")
    dur, alg, busbw = one(t.to_pandas("collectives"))
    hw = load_hardware("trn1")
    R = rank_dma("trn1", 1)
    assert R == pytest.approx(85, rel=0.01)
    assert dur == pytest.approx(2 * hw.data["cc"]["onchip_latency_ns"] + 1.5 * S / R, rel=0.01)
    assert busbw == pytest.approx(S / dur, rel=0.01)   # 2 ranks: bus = algorithm bandwidth
    k = t.to_pandas("kernels")
    assert (k.hbm_read_bytes == 2 * S).all() and (k.hbm_write_bytes == 1.5 * S).all()
    tracks, c = t.to_pandas("tracks"), t.to_pandas("counters")
    link = c[c.track_id.isin(tracks[tracks.name == "Link Bandwidth"].track_id)]
    assert link.value.max() == 0


def test_torus_dimensions_run_at_once(cap, tmp_path):
    """16 chips of a trn2.48xlarge, one rank each, with DMA to spare: a large hierarchical all-reduce
    moves its x and y levels' bytes over the two dimensions' links at once, so it takes the busier
    dimension's time, not the sum of both (the rows-then-columns order would take ~1.6x)."""
    f = tmp_path / "fast-dma.toml"
    f.write_text('base = "trn2.48xlarge"\nname = "trn2-fast-dma"\ncores_per_chip = 2\n[lnc]\ndefault = 2\n'
                 'choices = [2]\n[cc]\ndma_engines_per_core = 64\n')
    S = 1 << 30
    dur, alg, _ = one(cap(hardware=str(f), workload="allreduce", shape=f"{S},16", cc_algorithm="hierarchical")
                      .to_pandas("collectives"))
    (B, a), _ = tiers("trn2.48xlarge")
    x = 2 * 3 / 4 * S / B                   # level x: 4 members on the whole buffer
    y = 2 * 3 / 4 * (S / 4) / B             # level y: on the quarter each x group kept
    assert alg == "hierarchical"
    assert dur == pytest.approx(4 * 3 * a + max(x, y), rel=0.02)
    assert dur < 4 * 3 * a + x + y - 0.5 * y


def test_a_collective_and_compute_share_the_chips_hbm():
    """A collective that takes 80% of a chip's HBM for 10 us leaves 20% to compute that wants 50%:
    the compute stretch progresses at 0.2/0.5 of its pace meanwhile (4 us of its 10 us in the first
    10 us) and finishes at 16 us; on another chip it is not slowed. The collective's bytes are tallied
    as HBM reads and writes."""
    cap_ = np.array([100.0, 1e6, 100.0])        # link, DMA, HBM bytes/ns
    led = LinkLedger(2, cap_, 100.0, 1e6, link_tiers=1, hbm=2)
    coll = led.flow(0.0, 1e4, np.array([0]), np.array([[0.0, 0.0, 80.0 * 1e4]]), np.zeros((1, 3)), hbm_read=0.75)
    assert coll == pytest.approx(1e4, rel=1e-9)
    slowed = led.compute(0.0, 1e4, 0, 50.0 * 1e4)
    alone = led.compute(0.0, 1e4, 1, 50.0 * 1e4)
    assert slowed == pytest.approx(1.6e4, rel=0.01) and alone == pytest.approx(1e4, rel=1e-9)
    rd, wr = led.hbm_bytes(0)
    assert rd.sum() == pytest.approx(0.75 * 80e4) and wr.sum() == pytest.approx(0.25 * 80e4)


def test_tensor_parallel_all_reduce_traffic_shows_in_the_hbm_counters(cap):
    """TP=4 on one trn3 chip: the all-reduces' DMA reads and writes land in the chip's HBM counters
    while no kernel runs (between ops, the counters were flat before collectives touched HBM)."""
    t = cap(hardware="trn3-ultraserver-gen1", workload="llama3.1-8b", tp=4, layers=1, phase="prefill", seq=2048)
    c, tracks = t.to_pandas("counters"), t.to_pandas("tracks")
    coll = t.to_pandas("collectives")
    ar = coll[coll.kind.isin(["all_gather", "reduce_scatter"])].sort_values("end_ns")
    long = ar[(ar.end_ns - ar.start_ns) > 20_000].iloc[0]
    rd = c[c.track_id.isin(tracks[tracks.name == "HBM Read Bandwidth"].track_id)].sort_values("time_ns")
    during = rd[(rd.time_ns >= long.start_ns) & (rd.time_ns < long.end_ns)]
    assert during.value.max() > 0


def test_more_ranks_than_the_system_has_are_refused(cap):
    from simcore.capture import CaptureConfig, resolve
    from simcore.errors import ConfigError

    with pytest.raises(ConfigError, match=r"allreduce over 257 ranks exceeds the 256 logical cores \(LNC=2\) of the 64 "
                                          "chips of trn3-ultraserver-gen1"):
        resolve(CaptureConfig(hardware=GEN1, workload="allreduce", shape="1024,257"))


def test_collectives_at_the_same_time_share_the_links():
    """A flow alone takes its idle time; a second one on the same chip and tier at the same time
    gets what the first leaves (the link never carries more than its bandwidth, so together they
    take as long as their bytes need); a flow on another chip is unaffected."""
    bw = np.array([100.0])                    # bytes/ns per direction
    need = np.array([[1e6]])                  # 1 MB out over tier 0: 10 us alone
    led = LinkLedger(4, bw, 100.0, 1e6)
    alone = led.flow(0.0, 1e4, np.array([0]), need, np.zeros((1, 1)))
    assert alone == pytest.approx(1e4, rel=1e-9)
    led = LinkLedger(4, bw, 100.0, 1e6)
    first = led.flow(0.0, 1e4, np.array([1]), need, np.zeros((1, 1)))
    second = led.flow(0.0, 1e4, np.array([1]), need, np.zeros((1, 1)))
    other = led.flow(0.0, 1e4, np.array([2]), need, np.zeros((1, 1)))
    assert first == pytest.approx(1e4, rel=1e-9)           # served first, at full speed
    assert second == pytest.approx(2e4, rel=0.01)          # had to wait for the link: the sum of both
    assert other == pytest.approx(1e4, rel=1e-9)
    assert led.sent(1)[:200].sum() == pytest.approx(2e6)   # the Link Bandwidth counter's source
