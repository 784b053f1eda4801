"""Fused kernels (--fusion on, the default) against one kernel per op (--fusion off), through captures:
what a user sees in the kernels table and in the instruction rows."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.cli.main import main


def kernel_bounds(trace):
    """Kernels with their lower bound max(FLOPs / peak, HBM bytes / HBM bandwidth) (as test_physics)."""
    hw = trace.hardware
    k = trace.to_pandas("kernels")
    peak = k.dtype.astype(str).map(hw["tensor"]["peak_tflops"]).astype(float) * 1e3
    k["bound_ns"] = np.maximum(k.flops / peak, (k.hbm_read_bytes + k.hbm_write_bytes) / hw["hbm"]["bandwidth_gbps"])
    return k

DECODE = dict(workload="llama3.1-8b", phase="decode", batch=1, context=4096, layers=2)


def _leaf_names(trace) -> set[str]:
    ops = trace.to_pandas("ops")
    return set(ops[ops.level == "op"].name.astype(str))


def test_fusion_runs_the_nxdi_kernels_and_is_faster_in_decode(cap):
    fused, plain = cap(**DECODE), cap(**DECODE, fusion="off")
    names = _leaf_names(fused)
    assert {"attention.fused_qkv", "mlp.fused_mlp", "fused_lm_head"} <= names
    assert not names & {"attention.input_norm", "attention.qkv_proj", "attention.rope", "mlp.silu_mul",
                        "mlp.down_proj", "mlp.post_attention_norm"}
    assert {"attention.input_norm", "attention.rope", "mlp.down_proj"} <= _leaf_names(plain)
    assert fused.to_pandas("kernels").shape[0] < 0.6 * plain.to_pandas("kernels").shape[0]
    assert fused.duration_ns < 0.95 * plain.duration_ns
    # the same weights stream either way; fusion saves the intermediate tensors' reads (decode's writes are tiny:
    # every core stores the residual stream it computed, and the MLP's partial sums)
    kf, kp = fused.to_pandas("kernels"), plain.to_pandas("kernels")
    assert kf.hbm_read_bytes.sum() <= kp.hbm_read_bytes.sum()
    assert kf.hbm_read_bytes.sum() > 0.97 * kp.hbm_read_bytes.sum()
    assert kf.model_flops.sum() == kp.model_flops.sum()
    assert "fusion" not in fused.meta["capture"]["options"]       # the default is not recorded
    assert plain.meta["capture"]["options"]["fusion"] == "off"


def test_a_fused_kernel_prefetches_its_weights_during_the_norm(cap):
    """Inside the fused QKV kernel the projection's weight loads start before the RMSNorm's last
    instruction ends: what was an op boundary no longer holds the weights back (a 512-token prefill,
    whose norm is long enough to see it)."""
    t = cap(workload="llama3.1-8b", phase="prefill", seq=512, layers=1, cores="0")
    k = t.to_pandas("kernels")
    qkv = k[(k.core == 0) & (k.name.astype(str) == "fused_qkv")].iloc[0]
    ins, dma = t.to_pandas("instructions"), t.to_pandas("dma")
    inside = lambda df: df[(df.start_ns >= qkv.start_ns) & (df.start_ns < qkv.start_ns + qkv.dur_ns)]
    ins, dma = inside(ins), inside(dma)
    norm_end = ins[ins.opcode.astype(str) == "ActivationReduce"].eval("start_ns + dur_ns").max()
    weights = dma[(dma.src.astype(str) == "hbm") & (dma.bytes > 64 * 1024)]
    assert len(weights) and weights.start_ns.min() < norm_end
    assert not (ins.opcode.astype(str) == "CoreBarrier").any()   # the QKV kernel needs no cross-core exchange


def test_flash_decoding_reads_each_kv_head_once_per_rank_on_every_core(cap):
    """Llama 3.1 8B at tp 16 (LNC=2: 4 chips of 4 ranks, 2 physical cores each): a rank holds 2 query heads and
    1 KV head. One kernel per op puts a query head on each core, both reading the KV head; flash decoding
    splits the keys over the rank's 2 cores and combines the partial outputs across them."""
    opts = dict(DECODE, layers=1, hardware="trn3-ultraserver-gen1", tp=16, context=8192)
    on, off = cap(**opts), cap(**dict(opts, fusion="off"))

    def attention(t):
        k = t.to_pandas("kernels")
        return k[(k.chip == 0) & k.name.astype(str).str.contains("flash")]

    a_on, a_off = attention(on), attention(off)
    kv_bytes = 4 * 8193 * 128 * 2 * 2            # K and V of one head per rank, 4 ranks a chip, BF16
    assert a_on.core.nunique() == 8 and (a_on.name.astype(str) == "flash_decode_split_kv").all()
    assert a_on.hbm_read_bytes.sum() == pytest.approx(kv_bytes, rel=0.05)
    assert a_off.hbm_read_bytes.sum() == pytest.approx(2 * kv_bytes, rel=0.05)
    assert a_on.dur_ns.max() < a_off.dur_ns.max()
    too_fast = kernel_bounds(on).query("dur_ns < bound_ns")
    assert too_fast.empty, too_fast[["name", "dur_ns", "bound_ns"]]


def test_training_and_op_graphs_are_not_fused(cap):
    t = cap(workload="llama3.1-8b", phase="train", seq=128, layers=1)
    assert "attention.input_norm" in _leaf_names(t) and not any("fused" in n for n in _leaf_names(t))


def test_cli_fusion_switch_and_a_bad_value(capsys, tmp_path):
    def trnx(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        try:
            main(["capture", *args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, capsys.readouterr().err

    code, err = trnx("-w", "llama3.1-8b", "--fusion", "maybe", "-o", str(tmp_path / "x.trnx"))
    assert code == 2 and "maybe" in err and "Traceback" not in err and not (tmp_path / "x.trnx").exists()
    code, err = trnx("-w", "llama3.1-8b", "--layers", "1", "--fusion", "off", "-q", "-o", str(tmp_path / "y.trnx"))
    assert code == 0, err
    from explorer import open_trace
    assert "attention.input_norm" in _leaf_names(open_trace(tmp_path / "y.trnx"))


def test_fused_kernels_never_beat_their_roofline_in_prefill_and_decode(cap):
    for opts in (dict(DECODE, batch=8), dict(workload="llama3.1-8b", phase="prefill", seq=512, layers=1),
                 dict(DECODE, dtype="mxfp8")):
        k = kernel_bounds(cap(**opts))
        assert np.all(k.dur_ns >= k.bound_ns), k[k.dur_ns < k.bound_ns][["name", "dur_ns", "bound_ns"]]


def test_prefill_attention_with_fewer_heads_than_cores_uses_every_core(cap):
    """Llama 3.1 70B at tp 64 (LNC=2): a rank has one query head and two physical cores. Its prefill attention
    splits the head's queries over both, zig-zag, so the causal work is balanced and neither core idles."""
    t = cap(workload="llama3.1-70b", hardware="trn2.48xlarge", tp=64, phase="prefill", seq=2048, layers=1)
    k = t.to_pandas("kernels")
    attn = k[(k.chip == 0) & (k.name.astype(str) == "flash_attention")]
    assert attn.core.nunique() == 8
    assert attn.dur_ns.max() < 1.25 * attn.dur_ns.min()
    causal_pairs = 2048 * 2049 // 2
    assert attn.model_flops.sum() == 4 * 2 * causal_pairs * (128 + 128)   # 4 ranks of one head on chip 0
