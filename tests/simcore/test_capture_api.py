"""`simcore.capture(...)`: the trace contract, determinism, atomicity, progress and cancel."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import simcore
from simcore.capture import CaptureCancelled, CaptureConfig
from simcore.errors import ConfigError, UserError
from simcore.trace import open_trace
from simcore.trace import schema as S


def test_meta_has_what_analyses_rely_on(cap):
    t = cap(workload="llama3.1-8b", phase="decode", batch=2, context=512, layers=1, seed=3)
    hw, wl, sim = t.hardware, t.workload, t.meta["simulator"]
    for key in ("name", "chips", "cores_per_chip"):
        assert key in hw
    assert hw["tensor"]["rows"] == 128 and hw["tensor"]["cols"] == 128 and hw["tensor"]["clock_ghz"] == 2.4
    assert hw["tensor"]["peak_tflops"]["mxfp8"] == 314.57 and hw["tensor"]["bf16_flop_weight"]["mxfp8"] == 0.25
    assert hw["hbm"]["capacity_bytes"] == 144 * 2**30 and hw["hbm"]["bandwidth_gbps"] == 4900
    assert hw["link"]["bandwidth_gbps"] > 0
    assert hw["dma"]["latency_ns"] == 1300  # the whole preset, not just the keys above
    assert (wl["name"], wl["kind"], wl["phase"], wl["dtype"]) == ("llama3.1-8b", "model", "decode", "bf16")
    assert wl["batch"] == 2 and wl["context"] == 512 and wl["layers"] == 1
    assert sim == {"name": "simcore", "version": simcore.__version__, "seed": 3, "is_simulation": True}
    assert t.meta["capture"]["detail"] == "kernel" and t.meta["capture"]["compute_cores"] == 8


def test_kernel_detail_has_kernels_on_every_core_and_no_instructions(cap):
    t = cap(workload="llama3.1-8b", phase="prefill", seq=512, layers=1)
    k, tracks = t.to_pandas("kernels"), t.to_pandas("tracks")
    assert sorted(k.core.unique()) == list(range(8))
    ins = t.to_pandas("instructions")  # only the runtime's rows: launches and barriers, no engine instruction
    assert set(ins.track_id) <= set(tracks.track_id[tracks.kind == "runtime"])
    assert set(ins.opcode) == {"KernelLaunch", "OpBarrier"}
    assert t.row_count("dma") == 0 and t.row_count("flows") == 0
    kt = tracks[tracks.kind == "kernel"]
    assert len(kt) == 8 and set(kt.core) == set(range(8))
    assert set(k.track_id) <= set(kt.track_id)
    assert (k.chip == 0).all()


def test_instruction_detail_contract(cap):
    t = cap(workload="llama3.1-8b", phase="decode", layers=1, cores="0,5")
    tracks, ins, dma, flows = (t.to_pandas(n) for n in ("tracks", "instructions", "dma", "flows"))
    ins = ins[~ins.track_id.isin(tracks.track_id[tracks.kind == "runtime"])]  # every core has a Runtime row
    names = set(tracks[(tracks.core == 5)].name)
    assert {"Tensor", "TensorMatrix", "Vector", "Scalar", "GpSimd", "Sync", "qSyncIO0", "Kernels"} <= names
    assert set(tracks[tracks.track_id.isin(ins.track_id)].core) == {0, 5}
    assert set(tracks[tracks.track_id.isin(ins.track_id)].kind) <= {"tensor", "tensor_matrix", "vector", "scalar",
                                                                  "gpsimd", "sync"}
    assert set(tracks[tracks.track_id.isin(dma.track_id)].kind) == {"dma_queue"}
    # rows grouped by track, starts sorted within a track
    for df in (ins, dma):
        tid = df.track_id.to_numpy()
        assert (np.diff(tid) >= 0).all()
        same = np.diff(tid) == 0
        assert (np.diff(df.start_ns.to_numpy())[same] >= 0).all()
    # one id space; flows connect existing events and point forward in time
    ids = np.concatenate([ins.id.to_numpy(), dma.id.to_numpy()])
    assert len(np.unique(ids)) == len(ids)
    assert np.isin(flows.src_id, ids).all() and np.isin(flows.dst_id, ids).all() and len(flows) > 0
    end = dict(zip(ids, np.concatenate([(ins.start_ns + ins.dur_ns).to_numpy(), (dma.start_ns + dma.dur_ns).to_numpy()])))
    start = dict(zip(ids, np.concatenate([ins.start_ns.to_numpy(), dma.start_ns.to_numpy()])))
    sample = flows.sample(min(2000, len(flows)), random_state=0)
    assert all(start[d] >= end[s] - 1 for s, d in zip(sample.src_id, sample.dst_id))
    # DMA rows: HBM <-> SBUF, partitions given
    assert set(dma.src.astype(str)) <= {"hbm", "sbuf"} and (dma.partitions > 0).all()
    # instructions point at kernels of their core
    k = t.to_pandas("kernels")
    assert np.isin(ins.kernel_id, k.kernel_id).all()
    assert set(ins.opcode.astype(str)) >= {"LoadStationary", "MultiplyMoving", "Exponential", "DmaTrigger"}
    # the instruction FLOPs add up to the kernels' FLOPs
    k0 = k[k.core == 0]
    assert ins[ins.kernel_id.isin(k0.kernel_id)].flops.sum() == k0.flops.sum()


def test_ops_hierarchy_and_kernel_flops(cap):
    t = cap(workload="mixtral-8x7b", phase="decode", batch=4, layers=2, seed=1)
    ops, k = t.to_pandas("ops"), t.to_pandas("kernels")
    root = ops[ops.parent_id == -1]
    assert len(root) == 1 and root.level.iloc[0] == "model" and root.name.iloc[0] == "Mixtral-8x7B"
    layers = ops[ops.level == "layer"]
    assert list(layers.name) == ["layer 0", "layer 1"] and (layers.parent_id == root.op_id.iloc[0]).all()
    leaf = ops[ops.level == "op"]
    assert set(leaf.parent_id) <= set(layers.op_id) | set(root.op_id)
    assert np.isin(k.op_id, leaf.op_id).all()
    # every op spans its kernels
    span = k.assign(end=k.start_ns + k.dur_ns).groupby("op_id").agg(s=("start_ns", "min"), e=("end", "max"))
    o = leaf.set_index("op_id").loc[span.index]
    assert (o.start_ns == span.s).all() and (o.start_ns + o.dur_ns == span.e).all()
    assert (k.model_flops <= k.flops).all() and k.flops.sum() > 0
    assert set(leaf.kind) >= {"matmul", "grouped_matmul", "attention", "rmsnorm", "router_topk", "moe_combine"}


def test_same_seed_same_trace_and_moe_routing_follows_the_seed(tmp_path):
    paths = []
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        paths.append(simcore.capture(workload="qwen3-30b-a3b", phase="decode", batch=8, layers=1, cores="0", seed=seed,
                                     out_path=tmp_path / f"{name}.trnx"))
    a, b, c = (open_trace(p) for p in paths)
    for table in S.TABLES:
        assert a.table(table).equals(b.table(table)), table
    assert a.meta == {**b.meta, "simulator": a.meta["simulator"]}
    assert not a.table("kernels").equals(c.table("kernels"))


def test_validation_happens_before_anything_is_written(tmp_path):
    out = tmp_path / "x.trnx"
    with pytest.raises(ConfigError, match="trn2 has no mxfp8 support"):
        simcore.capture(workload="gemm", dtype="mxfp8", hardware="trn2", out_path=out)
    with pytest.raises(ConfigError, match="needs an output path"):
        simcore.capture(workload="gemm")
    with pytest.raises(ConfigError, match="unknown capture option 'bogus'"):
        simcore.capture(workload="gemm", bogus=1, out_path=out)
    assert list(tmp_path.iterdir()) == []


def test_config_object_and_dict_and_kwargs_agree(tmp_path):
    cfg = CaptureConfig(workload="softmax", shape="256,1024")
    a = simcore.capture(cfg, tmp_path / "a.trnx")
    b = simcore.capture({"workload": "softmax", "shape": "256,1024"}, tmp_path / "b.trnx")
    c = simcore.capture(workload="softmax", shape=(256, 1024), out_path=tmp_path / "c.trnx")
    kd = [open_trace(p).to_pandas("kernels").dur_ns.tolist() for p in (a, b, c)]
    assert kd[0] == kd[1] == kd[2]


def test_progress_reports_increasing_fractions_up_to_one(tmp_path):
    seen = []
    simcore.capture(workload="llama3.1-8b", layers=2, out_path=tmp_path / "p.trnx",
                    progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(seen) > 10
    assert all(isinstance(m, str) and m for _, m in seen)


def test_cancel_leaves_nothing_behind(tmp_path):
    cancel = threading.Event()

    def progress(fraction, message):
        if fraction > 0.3:
            cancel.set()

    out = tmp_path / "c.trnx"
    with pytest.raises(CaptureCancelled) as info:
        simcore.capture(workload="llama3.1-8b", layers=4, out_path=out, progress=progress, cancel=cancel)
    assert isinstance(info.value, UserError)
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_overwrite(tmp_path):
    out = simcore.capture(workload="rmsnorm", shape="128,512", out_path=tmp_path / "r.trnx")
    with pytest.raises(ConfigError, match="already exists"):
        simcore.capture(workload="rmsnorm", shape="128,512", out_path=out)
    simcore.capture(workload="rmsnorm", shape="256,512", out_path=out, overwrite=True)
    assert open_trace(out).workload["rows"] == 256


def test_all_cores_instruction_detail_and_counters(cap):
    t = cap(workload="attention", shape="1,8,512,512", compute_cores=8, cores="all")
    ins, tracks, c = t.to_pandas("instructions"), t.to_pandas("tracks"), t.to_pandas("counters")
    assert set(tracks[tracks.track_id.isin(ins.track_id)].core) == set(range(8))
    counter_names = set(tracks[tracks.kind == "counter"].name)
    assert {S.COUNTER_HBM_READ, S.COUNTER_HBM_WRITE, S.COUNTER_SBUF, S.COUNTER_PSUM, S.COUNTER_THROTTLE,
            S.COUNTER_LINK} <= counter_names
    units = dict(zip(tracks.name, tracks.unit))
    assert units[S.COUNTER_HBM_READ] == "GB/s" and units[S.COUNTER_SBUF] == "bytes" and units[S.COUNTER_THROTTLE] == "%"
    sbuf = c[c.track_id.isin(tracks[(tracks.name == S.COUNTER_SBUF) & (tracks.core == 3)].track_id)]
    assert sbuf.value.max() > 0 and sbuf.value.max() <= t.hardware["sbuf"]["bytes_per_core"]
    hbm_tracks = tracks[tracks.name.isin([S.COUNTER_HBM_READ, S.COUNTER_HBM_WRITE])]
    assert (hbm_tracks.core == -1).all()


def test_dictionary_columns_use_the_schema_types(cap):
    t = cap(workload="gemm", shape="512,512,512", cores="0")
    assert t.table("instructions").schema.field("opcode").type == pa.dictionary(pa.int32(), pa.string())
    assert t.table("dma").schema.field("src").type == pa.dictionary(pa.int32(), pa.string())
