"""Multi-chip captures: UltraServer steps that validate, stragglers and expert skew that make ranks
wait, chip-partitioned tables, instruction detail on picked chips, determinism, and the API."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow.feather as feather
import pytest

import simcore
from simcore.capture import CaptureCancelled, CaptureConfig, resolve
from simcore.errors import ConfigError
from simcore.trace import open_trace

GEN1 = "trn3-ultraserver-gen1"
RANKS_PER_CHIP = 4   # trn3 at its default LNC=2: 8 physical cores, 4 logical cores (ranks)
SMALL = dict(hardware=GEN1, workload="llama3.1-8b", tp=16, layers=2, batch=2)   # 16 ranks on 4 chips


def per_chip_wait(t):
    """Each chip's collective wait, per rank on it (its ranks wait alike)."""
    c = t.to_pandas("collectives")
    return c.groupby("chip").wait_ns.sum() / RANKS_PER_CHIP


def test_llama70b_tp64_decode_step_on_16_chips(cap):
    """TP counts ranks, one per logical core, as NxD Inference's tp_degree does: TP=64 at LNC=2 is
    16 chips of 4 ranks, and the all-reduces join ranks of one chip and of others."""
    t = cap(hardware=GEN1, workload="llama3.1-70b", tp=64)  # the whole 80-layer step; open_trace validated it
    assert t.hardware["chips"] == 16 and t.meta["capture"]["parallelism"]["tp"] == 64
    assert (t.meta["capture"]["lnc"], t.meta["capture"]["ranks"]) == (2, 64)
    k = t.to_pandas("kernels")
    assert sorted(k.chip.unique()) == list(range(16)) and sorted(k.core.unique()) == list(range(8))
    c = t.to_pandas("collectives")
    ar = c[c.kind == "all_reduce"]
    assert ar.collective_id.nunique() == 2 * 80 + 1  # o_proj and down_proj per layer, and the embedding
    assert (c.groupby("collective_id").size() == 64).all()
    assert (c.groupby(["collective_id", "chip"]).size() == RANKS_PER_CHIP).all()   # 4 ranks of each chip take part
    # 1 head per rank (64 / 64): flash decoding splits its keys over both physical cores of the rank (--fusion on)
    att = k[(k.chip == 3) & (k.name == "flash_decode_split_kv")]
    assert att.groupby("op_id").size().eq(2 * RANKS_PER_CHIP).all() and set(att.core % 2) == {0, 1}
    tracks = t.to_pandas("tracks")
    per_core = tracks[tracks.core >= 0]
    assert (per_core.lcore == per_core.core // 2).all()            # physical core 2l and 2l+1 make logical core l
    cc = tracks[(tracks.kind == "cc") & (tracks.core < 0) & (tracks.chip == 3)]
    assert sorted(cc.lcore) == [0, 1, 2, 3] and set(cc.name.astype(str)) == {f"CC rank {r}" for r in range(12, 16)}
    assert t.partition_chips("kernels") == list(range(16))


def test_lnc1_makes_every_physical_core_a_rank(cap):
    t = cap(hardware=GEN1, workload="llama3.1-8b", tp=16, lnc=1, layers=1)
    assert t.hardware["chips"] == 2 and t.meta["capture"]["lnc"] == 1
    tracks = t.to_pandas("tracks")
    per_core = tracks[tracks.core >= 0]
    assert (per_core.lcore == per_core.core).all()
    c = t.to_pandas("collectives")
    assert (c.groupby(["collective_id", "chip"]).size() == 8).all()


def test_ranks_of_one_chip_all_reduce_through_the_chip(cap):
    """TP=4 at LNC=2 is one chip: its all-reduces never touch a chip-to-chip link."""
    t = cap(hardware=GEN1, workload="llama3.1-8b", tp=4, layers=1)
    assert t.hardware["chips"] == 1
    c = t.to_pandas("collectives")
    assert len(c) and set(c.chip) == {0} and set(c.group_size) == {4}
    tracks = t.to_pandas("tracks")
    link = tracks[tracks.name == "Link Bandwidth"].track_id
    counters = t.to_pandas("counters")
    assert counters[counters.track_id.isin(link)].value.max() == 0


def test_tp1_is_one_rank_on_one_logical_core_not_the_whole_chip(cap):
    """A parallel degree counts ranks = logical cores even at 1 (NxD Inference's tp_degree=1): --tp 1 runs on
    the 2 physical cores and one HBM stack of logical core 0, so a sweep over tp=1,2,4 adds logical cores
    one rank at a time; the whole chip stays what a capture with no degree simulates."""
    whole = cap(hardware=GEN1, workload="llama3.1-8b", layers=2)
    one = cap(hardware=GEN1, workload="llama3.1-8b", layers=2, tp=1)
    two = cap(hardware=GEN1, workload="llama3.1-8b", layers=2, tp=2)
    assert "ranks" not in whole.meta["capture"] and set(whole.to_pandas("kernels").core) == set(range(8))
    assert (one.meta["capture"]["ranks"], one.meta["capture"]["lnc"]) == (1, 2)
    assert set(one.to_pandas("kernels").core) == {0, 1} and set(two.to_pandas("kernels").core) == {0, 1, 2, 3}
    assert len(one.to_pandas("collectives")) == 0
    # HBM bound decode: one stack for one rank, two for two, four for the whole chip
    assert one.duration_ns > 1.6 * two.duration_ns and two.duration_ns > 1.6 * whole.duration_ns


def test_deepseek_ep64_decode_on_16_chips(cap):
    # the whole step (3 dense + 58 MoE layers); MXFP8 weights: in BF16 a rank's 4 experts and its replica of the
    # attention exceed a logical core's 36 GiB
    t = cap(hardware=GEN1, workload="deepseek-v3", chips=16, ep=64, batch=256, dtype="mxfp8")
    c = t.to_pandas("collectives")
    a2a = c[c.kind == "all_to_all"]
    assert a2a.collective_id.nunique() == 2 * 58 and set(a2a.group_size) == {64} and set(a2a.algorithm) == {"mesh"}
    assert t.meta["capture"]["chip_classes"] == 64 and t.partition_chips("collectives") == list(range(16))
    ops = t.to_pandas("ops")
    names = set(ops[ops.level == "op"].name.astype(str))
    assert {"moe.dispatch.all_to_all", "moe.combine.all_to_all", "moe.experts.gate_up_proj"} <= names
    k = t.to_pandas("kernels")
    experts = k[k.name.astype(str) == "grouped_matmul_gate_up_proj"]
    assert experts.chip.nunique() == 16
    # every rank holds 256 / 64 = 4 experts within its logical core's 36 GiB: its chip's 4 ranks in 144 GiB
    assert t.meta["capture"]["memory_bytes"]["weights"] < 144 * 2**30


def test_a_delayed_straggler_makes_every_other_rank_wait_about_the_delay(cap):
    base = per_chip_wait(cap(**SMALL))
    assert (base == 0).all()  # identical chips on an idle system: nobody waits
    w = per_chip_wait(cap(**SMALL, straggler="chip=2,delay=100us"))
    assert w[2] < 1_000  # the straggler itself (almost) never waits
    others = w.drop(2)
    assert np.allclose(others, 100_000, rtol=0.05)


def test_a_slow_straggler_makes_the_others_wait_at_every_collective(cap):
    base = cap(**SMALL)
    c = base.to_pandas("collectives")
    c0 = c[c.track_id == c.track_id.min()].sort_values("arrive_ns")   # one rank's collectives
    prev_end = np.r_[0, c0.end_ns.values[:-1]]
    compute = (c0.arrive_ns.values - prev_end).sum()  # compute before each collective, unperturbed
    w = per_chip_wait(cap(**SMALL, straggler="chip=1,slowdown=1.3"))
    assert w[1] < 1_000
    assert np.allclose(w.drop(1), 0.3 * compute, rtol=0.03)
    slow = cap(**SMALL, straggler="chip=1,slowdown=1.3").to_pandas("collectives")
    worst = slow.sort_values("wait_ns").groupby("collective_id").tail(1)
    assert (slow.groupby("collective_id").arrive_ns.idxmax().map(slow.chip) == 1).all()  # chip 1 is always last
    assert len(worst)


def test_jitter_is_seeded_and_makes_waits(cap):
    a = per_chip_wait(cap(**SMALL, jitter="2%", seed=1))
    b = per_chip_wait(cap(**SMALL, jitter="2%", seed=1))
    c = per_chip_wait(cap(**SMALL, jitter="2%", seed=2))
    assert a.sum() > 0 and a.equals(b) and not a.equals(c)


def test_all_to_all_waits_grow_with_expert_skew(cap):
    waits, received = [], []
    for skew in (0.0, 1.0, 2.0):
        t = cap(hardware=GEN1, workload="qwen3-30b-a3b", chips=4, ep=16, batch=64, layers=2, expert_skew=skew)
        c = t.to_pandas("collectives")
        a2a = c[c.kind == "all_to_all"]
        waits.append(a2a.wait_ns.sum())
        received.append(a2a.bytes.max())
    assert waits[0] < waits[1] < waits[2] and waits[1] > 2 * waits[0]
    assert received[0] < received[1] < received[2]  # hot experts' ranks get more tokens


def test_pipeline_stages_send_and_wait(cap):
    t = cap(hardware=GEN1, workload="llama3.1-8b", tp=8, pp=2, batch=4, layers=4)   # stage 0: chips 0-1, stage 1: 2-3
    c = t.to_pandas("collectives")
    p2p = c[c.kind == "send_recv"]
    assert set(p2p.group_size) == {2} and p2p.collective_id.nunique() == 2 * 8  # 2 microbatches x 8 TP ranks
    assert t.meta["capture"]["parallelism"]["microbatches"] == 2
    recv = p2p[p2p.chip >= 2]  # stage 1 receives: it waited for stage 0's first microbatch
    assert recv.wait_ns.max() > 0
    k = t.to_pandas("kernels")
    assert set(k[k.chip < 2].name.astype(str)) >= {"embedding"} and "sampling" not in set(k[k.chip < 2].name.astype(str))
    assert "sampling" in set(k[k.chip >= 2].name.astype(str))


def test_training_all_reduces_gradients_while_backward_runs(cap):
    t = cap(hardware=GEN1, workload="llama3.1-8b", phase="train", seq=256, tp=8, dp=2, batch=2, layers=2)
    c = t.to_pandas("collectives")
    ops = t.to_pandas("ops")
    grad = c[c.op_id.isin(ops[ops.name == "dp.grad_all_reduce"].op_id)]
    assert len(grad) == 2 * 16 and set(grad.group_size) == {2}  # one per layer per rank, over the DP pair
    k = t.to_pandas("kernels")
    last_backward = k[k.chip == 0].start_ns.max()
    first_grad = grad[grad.chip == 0].arrive_ns.min()
    assert first_grad < last_backward  # layer 1's gradients go while layer 0's backward still runs
    adam = k[(k.chip == 0) & (k.name == "adamw")]
    assert adam.start_ns.min() >= grad[grad.chip == 0].end_ns.min()  # the optimizer waits for its gradients
    assert t.meta["capture"]["parallelism"]["sp"] is True  # sequence parallel by default in training with tp


def test_instruction_detail_only_on_picked_chips_with_cc_streams(cap):
    t = cap(**SMALL, cores="0", detail_chips="1,3")
    tracks = t.to_pandas("tracks")
    ins = t.to_pandas("instructions")
    ins = ins[~ins.track_id.isin(tracks.track_id[tracks.kind == "runtime"])]  # every core has a Runtime row
    chips = tracks.set_index("track_id").chip
    assert set(chips[ins.track_id].unique()) == {1, 3}
    assert t.partition_chips("dma") == [1, 3] and t.partition_chips("instructions") == [0, 1, 2, 3]  # Runtime rows everywhere
    cc_core = tracks[(tracks.kind == "cc") & (tracks.core >= 0)]
    assert set(zip(cc_core.chip, cc_core.core)) == {(1, 0), (3, 0)}
    cc_ins = ins[ins.track_id.isin(cc_core.track_id)]
    assert {"CcReduceScatter", "CcAllGather"} <= set(cc_ins.opcode.astype(str))
    assert t.row_count("dma") > 0 and t.row_count("flows") > 0
    with pytest.raises(ConfigError, match="add --detail instruction"):
        resolve(CaptureConfig(**SMALL, detail="kernel", detail_chips="1"))


def test_tables_are_partitioned_so_one_chip_loads_alone(cap):
    t = cap(**SMALL)
    assert t.partition_chips("kernels") == [0, 1, 2, 3] and t.partition_chips("collectives") == [0, 1, 2, 3]
    one = t.table("kernels", chips=[2]).to_pandas()
    assert len(one) and set(one.chip) == {2}
    part = feather.read_table(t.path / "kernels" / "chip=2" / "part-0.arrow")
    assert part.num_rows == len(one)


def test_same_seed_same_trace(tmp_path):
    opts = dict(SMALL, jitter="2%", straggler="chip=3,slowdown=1.1")
    a = simcore.capture(out_path=tmp_path / "a.trnx", **opts)
    b = simcore.capture(out_path=tmp_path / "b.trnx", **opts)
    for table in ("kernels", "collectives", "counters"):
        for chip in range(4):
            f = f"{table}/chip={chip}/part-0.arrow"
            assert feather.read_table(a / f).equals(feather.read_table(b / f))


def test_one_rank_of_a_replica_equals_its_logical_core_simulated_alone(cap, tmp_path):
    """Pure data parallel inference has no collectives: each rank's kernels are exactly what the
    single-chip engine gives for its share of the batch on a chip that is one logical core -- 2
    physical cores and one of the 4 HBM stacks (a what-if preset) -- (the window cache changes nothing)."""
    core = tmp_path / "lcore.toml"
    core.write_text('base = "trn3"\nname = "trn3-lcore"\ncores_per_chip = 2\n[hbm]\nbandwidth_gbps = 1225\n'
                    'capacity_bytes = 38654705664\nstacks = 1\n[lnc]\ndefault = 2\nchoices = [2]\n')
    single = cap(hardware=str(core), workload="llama3.1-8b", batch=1, layers=2).to_pandas("kernels")
    single = single.sort_values(["core", "start_ns"])
    multi = cap(hardware=GEN1, workload="llama3.1-8b", batch=2, dp=2, layers=2).to_pandas("kernels")
    multi = multi[multi.core >= 2].sort_values(["core", "start_ns"])   # rank 1: logical core 1, physical cores 2-3
    assert len(single) == len(multi) and set(multi.core) == {2, 3}
    for col in ("start_ns", "dur_ns", "flops", "hbm_read_bytes"):
        assert (single[col].values == multi[col].values).all()


def test_process_workers_and_a_custom_runner_give_the_same_trace(tmp_path):
    opts = dict(hardware=GEN1, workload="qwen3-30b-a3b", chips=1, ep=4, batch=16, layers=1, expert_skew=1.0)
    inline = simcore.capture(out_path=tmp_path / "i.trnx", workers=1, **opts)
    procs = simcore.capture(out_path=tmp_path / "p.trnx", workers=2, **opts)

    class ThreadRunner:  # what a Ray or Dask adapter looks like: map(fn, tasks, done) -> results in order
        calls = 0

        def map(self, fn, tasks, done=None):
            ThreadRunner.calls += len(tasks)
            with ThreadPoolExecutor(2) as ex:
                out = list(ex.map(fn, tasks))
            for i in range(len(tasks)):
                done(i)
            return out

    custom = simcore.capture(out_path=tmp_path / "c.trnx", runner=ThreadRunner(), **opts)
    assert ThreadRunner.calls == 4  # every rank is its own class: its experts get different tokens
    for other in (procs, custom):
        f = "kernels/chip=0/part-0.arrow"
        assert feather.read_table(inline / f).equals(feather.read_table(other / f))


def test_progress_and_cancel_work_for_multichip_captures(tmp_path):
    seen = []
    simcore.capture(out_path=tmp_path / "p.trnx", progress=lambda f, m: seen.append(f), **SMALL)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0) and len(seen) > 5
    cancel = threading.Event()

    def stop(fraction, message):
        if fraction > 0.3:
            cancel.set()

    with pytest.raises(CaptureCancelled):
        simcore.capture(out_path=tmp_path / "c.trnx", progress=stop, cancel=cancel, **SMALL)
    assert not (tmp_path / "c.trnx").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["p.trnx"]


def test_meta_describes_the_system_and_re_runs(cap):
    t = cap(**SMALL, straggler="chip=1,delay=5us", jitter="1%")
    capm = t.meta["capture"]
    assert capm["topology"]["kind"] == "switch" and capm["topology"]["chips_per_server"] == 16
    assert [x["name"] for x in capm["topology"]["tiers"]] == ["in-server", "in-rack", "cross-rack", "on-chip"]
    assert capm["straggler"] == "chip=1,delay=5000ns" and capm["jitter"] == 0.01
    again = resolve(CaptureConfig(hardware=GEN1, workload="llama3.1-8b", layers=2, batch=2, chips=capm["chips"],
                                  tp=capm["parallelism"]["tp"], straggler=capm["straggler"], jitter=capm["jitter"]))
    assert again.multichip.stragglers[0].delay_ns == 5000


@pytest.mark.parametrize("options, message", [
    (dict(workload="llama3.1-70b", tp=48), "64 attention heads do not divide over --tp 48; use a divisor of 64 such as 32"),
    (dict(workload="llama3.1-405b", tp=16, pp=4), "126 layers do not divide over --pp 4 pipeline stages"),
    (dict(workload="deepseek-v3", chips=64, ep=48), "256 experts do not divide over --ep 48"),
    (dict(workload="llama3.1-70b", ep=4, chips=4), "--ep applies to mixture-of-experts models; llama3.1-70b is dense"),
    (dict(workload="llama3.1-8b", chips=16, tp=4, dp=2), r"--tp 4 x --dp 2 x --pp 1 = 8 ranks, but --chips 16 holds "
                                                          r"64 \(LNC=2: 4 per chip\)"),
    (dict(workload="llama3.1-8b", chips=128), r"512 ranks \(--tp 1 x --dp 512 x --pp 1\) need 128 chips at LNC=2 "
                                              r"\(4 ranks per chip\), more than the 64 chips of"),
    (dict(workload="llama3.1-8b", tp=4, lnc=4), "--lnc 4 is not a logical-core size of trn3-ultraserver-gen1; use 1 or 2"),
    (dict(workload="llama3.1-8b", tp=4, compute_cores=8), "--compute-cores applies to one-chip captures"),
    (dict(workload="llama3.1-8b", dp=4, batch=6), "--batch 6 does not divide over --dp 4"),
    (dict(workload="llama3.1-8b", tp=4, straggler="chip=9,slowdown=1.2"), "--straggler chip 9 does not exist"),
    (dict(workload="llama3.1-8b", tp=16, straggler="chip=1,slowdown=0.5"), "slowdown must be between 1 and 100"),
    (dict(workload="llama3.1-8b", tp=16, straggler="chip=1,delay=soon"), "must be a time like 200us"),
    (dict(workload="llama3.1-8b", tp=4, jitter="lots"), "--jitter 'lots' must be a percentage like 2%"),
    (dict(workload="llama3.1-8b", tp=4, expert_skew=1.0), "--expert-skew shapes mixture-of-experts routing"),
    (dict(workload="llama3.1-405b", tp=2), "needs 4\\d\\d\\.\\d GB of HBM per rank .* but a logical core of a "
                                           "trn3-ultraserver-gen1 chip \\(LNC=2\\) has 38.7 GB; use more --tp"),
    (dict(workload="gemm", tp=2), "--tp applies to model workloads, not gemm"),
    (dict(workload="allreduce", chips=8), "collective micro-benchmarks take their ranks from --shape"),
    (dict(workload="llama3.1-8b", tp=4, detail_chips="7", detail="instruction"), "--detail-chips 7 does not exist"),
    (dict(workload="llama3.1-8b", tp=4, sequence_parallel=True), "needs the 1 tokens of a microbatch to divide"),
])
def test_bad_multichip_requests_fail_with_one_sentence(options, message):
    with pytest.raises(ConfigError, match=message) as info:
        resolve(CaptureConfig(hardware=GEN1, **options))
    assert "\n" not in str(info.value) and str(info.value).endswith(".")


def test_choices_list_the_systems_and_options():
    c = simcore.capture.choices()
    hw = {h["name"]: h for h in c["hardware"]}
    assert hw["trn3-ultraserver-gen1"]["chips"] == 64 and hw["trn3-ultraserver-gen2"]["chips"] == 144
    assert hw["trn2.48xlarge"]["topology"]["kind"] == "torus2d" and hw["trn3"]["topology"] is None
    tiers = hw["trn3-ultraserver-gen2"]["topology"]["tiers"]
    assert [t["bandwidth_gbps"] for t in tiers[:3]] == [128, 160, 64] and tiers[3]["name"] == "on-chip"
    assert {"lnc", "tp", "ep", "dp", "pp", "jitter", "straggler", "expert_skew", "detail_chips"} <= set(c["options"])
    assert c["cc_algorithms"] == ["auto", "ring", "mesh", "hierarchical"]
