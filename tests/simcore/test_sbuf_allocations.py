"""The `sbuf_allocations` table: the buffers the lowering allocates, on instruction-detail cores, never
more than a core's SBUF or PSUM (in bytes, in any partition, at any instant), at addresses no two live
buffers share, and adding up to the footprint counters the trace already had."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

import simcore
from simcore.lowering.buffers import ring
from simcore.lowering.kernels import lower_kernel, shard
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def decode(tmp_path_factory):
    out = tmp_path_factory.mktemp("alloc") / "decode.trnx"
    return open_trace(simcore.capture(workload="llama3.1-8b", phase="decode", batch=8, context=4096, layers=2,
                                      cores="0,1", out_path=out))


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    out = tmp_path_factory.mktemp("alloc") / "moe.trnx"
    return open_trace(simcore.capture(workload="qwen3-30b-a3b", phase="prefill", seq=2048, layers=1, cores="0",
                                      out_path=out))


def never_overfull(t) -> int:
    """Checks every instant a buffer starts, per core and memory; returns how many instants were checked."""
    a = t.to_pandas("sbuf_allocations")
    hw = t.hardware
    checked = 0
    for (chip, core, mem), g in a.groupby(["chip", "core", "memory"], observed=True):
        parts = hw[str(mem)]["partitions"]
        capacity = hw[str(mem)]["bytes_per_core"]
        per_partition = capacity // parts
        s, e, nbytes = g.start_ns.to_numpy(), g.end_ns.to_numpy(), g.bytes.to_numpy()
        p0, np_, addr = g.partition_start.to_numpy(), g.partitions.to_numpy(), g.address.to_numpy()
        size = -(-nbytes // np_)
        assert (p0 + np_ <= parts).all() and (addr + size <= per_partition).all()
        for t0 in np.unique(s):
            live = np.flatnonzero((s <= t0) & (e > t0))
            assert nbytes[live].sum() <= capacity, (chip, core, mem, t0)
            use = np.zeros(parts, np.int64)
            for i in live:
                use[p0[i]:p0[i] + np_[i]] += size[i]
            assert use.max() <= per_partition, (chip, core, mem, t0)
            o = live[np.argsort(addr[live])]  # every buffer spans partitions from 0: addresses must not overlap
            assert (addr[o][1:] >= addr[o][:-1] + size[o][:-1]).all(), (chip, core, mem, t0)
            checked += 1
    return checked


def test_decode_buffers_fit_and_add_up_to_the_footprint_counters(decode):
    a = decode.to_pandas("sbuf_allocations")
    k = decode.to_pandas("kernels")
    assert decode.has_table("sbuf_allocations") and decode.version == "1.5"  # (1.4 added the table)
    assert set(a.core) == {0, 1}  # the instruction-detail cores only
    detailed = k[k.core.isin([0, 1])]
    assert set(a.kernel_id) == set(detailed.kernel_id)  # every kernel there allocates
    assert {"weights", "activations", "kv_cache", "accumulators", "scratch"} <= set(a.kind)
    assert never_overfull(decode) > 50
    # each kernel's buffers add up to the State Buffer Usage / PSUM Usage sample at its start
    tracks = decode.to_pandas("tracks")
    counters = decode.to_pandas("counters")
    for name, mem in (("State Buffer Usage", "sbuf"), ("PSUM Usage", "psum")):
        tr = tracks[(tracks.name == name) & tracks.core.isin([0, 1])][["track_id", "core"]]
        samples = counters.merge(tr, on="track_id").rename(columns={"time_ns": "start_ns"})
        want = detailed.merge(samples, on=["core", "start_ns"])[["kernel_id", "value"]]
        rows = a[a.memory == mem]
        total = rows.groupby("kernel_id").bytes.sum().reindex(want.kernel_id).fillna(0).to_numpy()
        # a grouped matmul's problems and the stages of a fused kernel that does not fit take turns in the memory:
        # each range of rows (its buffers share their times) then holds at most the footprint
        largest = rows.groupby(["kernel_id", "start_ns", "end_ns"]).bytes.sum().groupby("kernel_id").max()
        largest = largest.reindex(want.kernel_id).fillna(0).to_numpy()
        assert len(want) == len(detailed)
        assert ((total == want.value.to_numpy()) | (largest == want.value.to_numpy())).all(), name
        assert (total == want.value.to_numpy()).mean() > 0.8, name
    # decode's attention reads the KV cache; its matmuls stream weights through multi-buffered slots
    attn = a[a.kernel_id.isin(k[k.name == "flash_decode"].kernel_id)]
    assert (attn[attn.kind == "kv_cache"].tensor.str.startswith(("K^T", "V"))).all() and len(attn[attn.kind == "kv_cache"])
    assert a.tensor.str.contains(r"B block \[2/\d\]").any()


def test_grouped_matmul_problems_take_turns_through_the_core_memory(moe):
    a = moe.to_pandas("sbuf_allocations")
    k = moe.to_pandas("kernels")
    grouped = a[a.kernel_id.isin(k[k.name.str.startswith("grouped_matmul")].kernel_id)]
    assert grouped.groupby("kernel_id").start_ns.nunique().min() > 10  # one range per expert problem
    assert never_overfull(moe) > 100
    # problems overlap in time (loads prefetch under the previous problem) but never at one address
    s = grouped[grouped.memory == "sbuf"].groupby(["kernel_id", "start_ns", "end_ns"]).size().reset_index()
    assert ((s.start_ns.to_numpy()[1:] < s.end_ns.to_numpy()[:-1])).any()


def test_multichip_allocations_only_on_detail_chips(tmp_path):
    out = simcore.capture(hardware="trn3-ultraserver-gen1", workload="llama3.1-8b", tp=16, layers=1, cores="0",
                          detail_chips="0,3", out_path=tmp_path / "mc.trnx")
    t = open_trace(out)
    a = t.to_pandas("sbuf_allocations")
    assert set(a.chip) == {0, 3} and set(a.core) == {0}
    k = t.to_pandas("kernels").set_index("kernel_id")
    assert (k.loc[a.kernel_id, "chip"].to_numpy() == a.chip.to_numpy()).all()
    assert never_overfull(t) > 10


def test_every_kernel_footprint_is_its_buffers():
    """Every kernel shape of a decode, prefill, training and MoE step: the footprint the lowering
    planned with (and the counters show) is exactly what the buffers it names add up to."""
    from simcore.capture.config import resolve
    from simcore.capture.options import CaptureConfig

    seen = 0
    for opts in (dict(workload="llama3.1-8b", phase="decode", batch=8), dict(workload="llama3.1-8b", phase="train",
                 seq=1024, layers=1), dict(workload="qwen3-30b-a3b", phase="decode", batch=16, layers=1)):
        res = resolve(CaptureConfig.from_kwargs(None, **opts))
        for op in res.workload.ops:
            for spec in {s for s in shard(op, res.compute_cores) if s is not None}:
                p = lower_kernel(res.hw, spec)
                ranges = {(b.first, b.last) for b in p.buffers}
                for mem, total in (("sbuf", p.sbuf_bytes), ("psum", p.psum_bytes)):
                    per_range = [sum(b.bytes for b in p.buffers if b.memory == mem and (b.first, b.last) == r)
                                 for r in ranges]
                    # one range (most kernels); problems taking turns (grouped matmuls, fused stages that do not
                    # all fit) hold the largest; fused stages that all fit hold all of theirs, one above the other
                    assert total in (max(per_range), sum(per_range)), (spec.name, mem)
                seen += 1
    assert seen > 30


def test_ring_reuses_addresses_only_after_waiting():
    starts, waits = ring([40, 40, 40, 30], 100)
    assert starts == [0, 40, 0, 40]
    assert waits == [[], [], [0], [1]]
    assert ring([100, 100], 100) == ([0, 0], [[], [0]])


def test_a_trace_before_1_4_opens_and_has_no_table(decode, tmp_path, capsys):
    old = tmp_path / "old.trnx"
    shutil.copytree(decode.path, old)
    meta = json.loads((old / "meta.json").read_text())
    del meta["tables"]["sbuf_allocations"]
    meta["version"] = "1.2"
    for v in meta["tables"].values():  # (a 1.2 trace has no checksums)
        v.pop("checksum", None)
        for part in v.get("partitions", []):
            part.pop("checksum", None)
    (old / "sbuf_allocations.arrow").unlink()
    (old / "meta.json").write_text(json.dumps(meta))
    t = open_trace(old)
    assert not t.has_table("sbuf_allocations")
    assert t.table("sbuf_allocations").num_rows == 0
    assert t.table("kernels").num_rows == decode.table("kernels").num_rows
    from explorer.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["query", str(old), "SELECT count(*) FROM sbuf_allocations"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "it has no sbuf_allocations (format 1.4 on; this trace is 1.2)." in err
    assert len(err.strip().splitlines()) == 1  # one sentence, no traceback


def test_query_sbuf_allocations_equals_pandas(decode):
    from click.testing import CliRunner

    from explorer.cli.main import cli

    sql = ("select core, kind, count(*) as n, sum(bytes) as total from sbuf_allocations "
           "where memory = 'sbuf' group by core, kind order by core, kind")
    r = CliRunner().invoke(cli, ["query", str(decode.path), sql, "--csv"])
    assert r.exit_code == 0, r.output
    from io import StringIO

    got = pd.read_csv(StringIO(r.output))
    a = decode.to_pandas("sbuf_allocations")
    a = a[a.memory == "sbuf"].astype({"kind": str})
    want = a.groupby(["core", "kind"]).agg(n=("bytes", "size"), total=("bytes", "sum")).reset_index()
    pd.testing.assert_frame_equal(got, want.sort_values(["core", "kind"]).reset_index(drop=True), check_dtype=False)

