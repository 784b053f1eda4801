"""Collectives between chips: timings agree with the alpha-beta formulas of the chosen algorithm
(computed here from the preset's numbers), bus bandwidth approaches the link bandwidth for large
messages and small ones are latency bound, and overlapping collectives share the links."""

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


def test_ring_on_a_trn2_torus_row(cap, one_rank_per_chip):
    """4 chips of a row of the 4x4 torus, one rank each: a bidirectional ring over the row's two links."""
    S = 1 << 28
    dur, alg, busbw = one(cap(hardware=one_rank_per_chip("trn2.48xlarge"), workload="allreduce", shape=f"{S},4")
                          .to_pandas("collectives"))
    B, a = tiers("trn2.48xlarge")[0]
    assert alg == "ring" and dur == pytest.approx(2 * 3 * a + 2 * 3 / 4 * S / B, rel=0.05)
    assert busbw == pytest.approx(B, rel=0.05)


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
