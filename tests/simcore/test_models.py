"""Workloads: model dimensions, op graphs per phase, MoE routing, JSON op graphs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import simcore

from simcore.capture.config import CaptureConfig, resolve
from simcore.errors import ConfigError
from simcore.workloads import MODELS
from simcore.workloads.llm import _route


@pytest.mark.parametrize("name, published_b", [
    ("llama3.1-8b", 8.03), ("llama3.1-70b", 70.6), ("llama3.1-405b", 405.9), ("mixtral-8x7b", 46.7),
    ("deepseek-v3", 671.0), ("qwen3-30b-a3b", 30.5),
])
def test_parameter_counts_match_the_published_totals(name, published_b):
    """The configs' dimensions reproduce each model card's parameter count (within 0.5%)."""
    assert MODELS[name].total_params() / 1e9 == pytest.approx(published_b, rel=0.005)


def test_decode_graph_runs_the_fused_kernels_by_default():
    """--fusion on: the QKV kernel takes the previous layer's residual add, the norm and RoPE; the MLP kernel
    the residual add, the norm, SwiGLU and (decode is TKG) the down projection; the head the last ones."""
    wl = resolve(CaptureConfig(workload="llama3.1-8b", phase="decode", layers=2)).workload
    for layer in (0, 1):
        assert [o.name for o in wl.ops if o.layer == layer] == ["attention.fused_qkv", "attention.core",
                                                                "attention.o_proj", "mlp.fused_mlp"]
    qkv1 = next(o for o in wl.ops if o.name == "attention.fused_qkv" and o.layer == 1)
    assert [p.name for p in qkv1.params["parts"]] == ["mlp.residual_add", "attention.input_norm",
                                                      "attention.qkv_proj", "attention.rope"]
    mlp = next(o for o in wl.ops if o.name == "mlp.fused_mlp")
    assert [p.name for p in mlp.params["parts"]] == ["attention.residual_add", "mlp.post_attention_norm",
                                                     "mlp.gate_up_proj", "mlp.silu_mul", "mlp.down_proj"]
    assert next(o for o in wl.ops if o.name == "attention.core").params["split_kv"]
    assert [o.name for o in wl.ops if o.layer == -1] == ["embedding", "fused_lm_head", "sampling"]


def test_decode_graph_has_one_layer_of_ops_per_layer():
    wl = resolve(CaptureConfig(workload="llama3.1-8b", phase="decode", layers=2, fusion="off")).workload
    names = [o.name for o in wl.ops if o.layer == 0]
    assert names == ["attention.input_norm", "attention.qkv_proj", "attention.rope", "attention.core",
                     "attention.o_proj", "attention.residual_add", "mlp.post_attention_norm", "mlp.gate_up_proj",
                     "mlp.silu_mul", "mlp.down_proj", "mlp.residual_add"]
    qkv = next(o for o in wl.ops if o.name == "attention.qkv_proj")
    assert (qkv.params["m"], qkv.params["k"], qkv.params["n"]) == (1, 4096, (32 + 2 * 8) * 128)
    attn = next(o for o in wl.ops if o.name == "attention.core")
    assert attn.params["kv_len"] == 4097 and attn.params["q_len"] == 1
    assert [o.name for o in wl.ops if o.layer == -1] == ["embedding", "final_norm", "lm_head", "sampling"]


def test_train_graph_has_backward_and_optimizer():
    wl = resolve(CaptureConfig(workload="llama3.1-8b", phase="train", seq=256, layers=1)).workload
    names = [o.name for o in wl.ops]
    assert "attention.qkv_proj.dgrad" in names and "attention.qkv_proj.wgrad" in names
    assert "attention.core.backward" in names and "optimizer.adamw" in names and "loss" in names
    fwd = next(o for o in wl.ops if o.name == "mlp.down_proj")
    wgrad = next(o for o in wl.ops if o.name == "mlp.down_proj.wgrad")
    assert (wgrad.params["m"], wgrad.params["k"], wgrad.params["n"]) == (fwd.params["k"], fwd.params["m"], fwd.params["n"])


def test_moe_routing_is_seeded_and_conserves_tokens():
    a = _route(64, 128, 8, np.random.default_rng(7))
    b = _route(64, 128, 8, np.random.default_rng(7))
    c = _route(64, 128, 8, np.random.default_rng(8))
    assert a.sum() == 64 * 8 and np.array_equal(a, b) and not np.array_equal(a, c)


def test_moe_layer_has_router_experts_and_shared_expert():
    cfg = resolve(CaptureConfig(workload="qwen3-30b-a3b", phase="decode", batch=4, layers=1)).workload
    kinds = {o.name: o for o in cfg.ops if o.layer == 0}
    assert "moe.router" in kinds and "moe.topk" in kinds and "moe.combine" in kinds
    experts = kinds["moe.experts.gate_up_proj"]
    assert sum(experts.params["ms"]) == 4 * 8 and experts.params["n"] == 2 * 768


@pytest.mark.parametrize("options, message", [
    (dict(workload="llama3.1-405b"), r"llama3.1-405b decode needs 8\d\d\.\d GB of HBM .* but trn3 has 154.6 GB.*shard it over at least 6 chips"),
    (dict(workload="llama3.1-8b", compute_cores=3), "32 attention heads do not divide over 3 compute cores"),
    (dict(workload="llama3.1-8b", context=200000), "exceed llama3.1-8b's maximum context of 131072"),
    (dict(workload="llama3.1-8b", layers=33), "--layers 33 exceeds the 32 layers"),
    (dict(workload="llama3.1-8b", phase="serve"), "unknown phase 'serve'"),
    (dict(workload="gemm", shape="4096,100,4096", dtype="mxfp8"), "K=100 is not a multiple of the MX scale group"),
    (dict(workload="gemm", shape="4096,4096,1000", compute_cores=3), "N=1000 does not divide evenly over 3"),
    (dict(workload="gemm", dtype="mxfp4", hardware="trn2"), "trn2 has no mxfp4 support"),
    (dict(workload="gpt5"), "unknown workload 'gpt5'"),
    (dict(workload="gemm", phase="decode"), "--phase applies to model workloads"),
    (dict(workload="llama3.1-8b", cores="9", detail="instruction"), "--cores 9 does not exist"),
    (dict(workload="llama3.1-8b", batch=0), "--batch must be a positive integer"),
])
def test_invalid_requests_fail_with_one_sentence(options, message):
    with pytest.raises(ConfigError, match=message) as info:
        resolve(CaptureConfig(**options))
    assert "\n" not in str(info.value) and str(info.value).endswith(".")


def test_opgraph_file(tmp_path, cap):
    graph = {"name": "block", "dtype": "bf16", "repeat": 2, "layers": [{"name": "blk", "ops": [
        {"name": "proj", "kind": "matmul", "m": 256, "k": 1024, "n": 2048},
        {"name": "attn", "kind": "attention", "batch": 1, "q_heads": 8, "kv_heads": 2, "q_len": 256, "kv_len": 256},
        {"name": "norm", "kind": "rmsnorm", "rows": 256, "cols": 1024},
    ]}]}
    f = tmp_path / "g.json"
    f.write_text(json.dumps(graph))
    t = cap(workload=str(f))
    ops = t.to_pandas("ops")
    assert list(ops[ops.level == "layer"].name) == ["blk #0", "blk #1"]
    assert sorted(ops[ops.level == "op"].name.unique()) == ["attn", "norm", "proj"]
    assert len(t.to_pandas("kernels")) == 2 * 3 * 8  # every op on all 8 cores


@pytest.mark.parametrize("graph, message", [
    ({"ops": [{"kind": "conv", "rows": 1}]}, "unknown kind 'conv'"),
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2}]}, r"\(matmul\) lacks n"),
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2, "n": -4}]}, "'n' must be a positive integer"),
    ({"layers": []}, "'layers' must be a non-empty list"),
])
def test_bad_opgraph_files(tmp_path, graph, message):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(graph))
    with pytest.raises(ConfigError, match=message):
        resolve(CaptureConfig(workload=str(f)))


@pytest.mark.parametrize("options, message", [
    (dict(workload="allreduce", shape="1024,1"), "needs at least 2 ranks"),
    (dict(workload="allgather", shape="1000,3"), "1000 bytes does not divide evenly over 3 ranks"),
    (dict(workload="alltoall", shape="1024,4", cores="0"), "--detail instruction does not apply"),
])
def test_invalid_collective_requests(options, message):
    with pytest.raises(ConfigError, match=message):
        resolve(CaptureConfig(**options))


def test_an_op_too_big_to_simulate_fails_before_lowering(tmp_path):
    f = tmp_path / "huge.json"
    f.write_text(json.dumps({"ops": [{"kind": "matmul", "m": 2**31 - 1, "k": 65536, "n": 65536}]}))
    with pytest.raises(ConfigError, match="above the simulator's limit"):
        simcore.capture(workload=str(f), out_path=tmp_path / "h.trnx")
    assert not (tmp_path / "h.trnx").exists()


@pytest.mark.parametrize("graph, message", [
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2, "n": 3}], "repeat": 10**18}, "expands to"),
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2, "n": 3}], "repeat": True}, "'repeat' must be a positive integer"),
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2, "n": 3, "bogus": 1}]}, "unknown key 'bogus'"),
    ({"ops": [{"kind": "matmul", "m": 1, "k": 2, "n": 3}], "dtype": "int4"}, "dtype must be one of"),
])
def test_opgraph_limits(tmp_path, graph, message):
    f = tmp_path / "g.json"
    f.write_text(json.dumps(graph))
    with pytest.raises(ConfigError, match=message):
        resolve(CaptureConfig(workload=str(f)))
