"""Importing hand-written multi-rank Kineto traces: tables, ranks, collectives, hierarchy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interop.kineto_samples import NCCL, rank_doc, rank_events, write_ranks
from simcore.errors import UserError
from simcore.trace import open_trace
from explorer.interop import import_kineto


@pytest.fixture()
def two_ranks(tmp_path: Path) -> Path:
    out = tmp_path / "run.trnx"
    import_kineto(write_ranks(tmp_path), out)
    return out


def test_import_gives_a_valid_trace_with_ranks_as_chips(two_ranks: Path) -> None:
    t = open_trace(two_ranks)  # validates every table
    tracks = t.to_pandas("tracks")
    assert sorted(tracks["chip"].unique()) == [0, 1]
    assert set(tracks["kind"]) == {"kernel", "cc", "dma_queue", "counter"}
    assert sorted(tracks.loc[tracks.chip == 0, "name"]) == [
        "Device Memory Allocated", "NCCL", "stream 20", "stream 7", "stream 7 copies"]
    assert t.meta["source"] == "kineto"
    assert t.meta["simulator"]["is_simulation"] is False
    assert t.hardware["name"] == "gpu" and t.hardware["chips"] == 2
    assert t.hardware["device"] == "NVIDIA H100 80GB HBM3"


def test_kernels_times_in_ns_from_the_earliest_event(two_ranks: Path) -> None:
    t = open_trace(two_ranks)
    k = t.to_pandas("kernels")
    # t0 is the ProfilerStep at 90 us: rank 0's first gemm at 100 us -> 10 000 ns
    r0 = k[k.chip == 0].sort_values("start_ns")
    assert list(r0["start_ns"]) == [10_000, 30_000, 110_000]
    assert list(r0["dur_ns"]) == [50_000, 60_000, 100_000]
    assert len(k) == 6 and len(t.instructions) == 6  # python_function and cuda_runtime events are not kernels
    i = t.to_pandas("instructions")
    assert (i["kernel_id"].to_numpy() == i["id"].to_numpy()).all()


def test_memcpy_becomes_dma_with_bytes_and_direction(two_ranks: Path) -> None:
    d = open_trace(two_ranks).to_pandas("dma")
    assert len(d) == 1
    row = d.iloc[0]
    assert (row.start_ns, row.dur_ns, row.bytes, row.src, row.dst) == (230_000, 20_000, 4096, "host", "hbm")


def test_collective_arrive_and_wait_computed_across_ranks(two_ranks: Path) -> None:
    c = open_trace(two_ranks).to_pandas("collectives").sort_values("chip")
    assert c["collective_id"].nunique() == 1
    assert list(c["arrive_ns"]) == [30_000, 80_000]
    assert list(c["start_ns"]) == [80_000, 80_000]
    assert list(c["wait_ns"]) == [50_000, 0]
    assert list(c["end_ns"]) == [90_000, 90_000]
    assert set(c["kind"]) == {"all_reduce"} and set(c["algorithm"]) == {"ring"}
    assert list(c["group_size"]) == [2, 2]
    assert list(c["bytes"]) == [2 * 1048576] * 2  # BF16 elements
    # 2 MiB in 10 us -> 209.7 GB/s algorithm bandwidth; bus = x 2(p-1)/p = x1 for p = 2
    assert c["algo_bw_gbps"].iloc[0] == pytest.approx(2097152 / 10_000)
    assert c["bus_bw_gbps"].iloc[0] == pytest.approx(2097152 / 10_000)


def test_ops_hierarchy_steps_ops_and_kernel_links(two_ranks: Path) -> None:
    t = open_trace(two_ranks)
    ops = t.to_pandas("ops").set_index("op_id")
    root = ops[ops.parent_id == -1]
    assert len(root) == 1 and root.iloc[0]["level"] == "model"
    steps = ops[ops.level == "layer"]
    assert sorted(steps["name"]) == ["rank 0 ProfilerStep#1", "rank 1 ProfilerStep#1"]
    mm = ops[ops.name == "aten::mm"]
    assert len(mm) == 4 and set(mm["parent_id"]) == set(steps.index)
    assert "torch/nn/modules/module.py(1501): _call_impl" not in set(ops["name"])  # python skipped by default
    k = t.to_pandas("kernels")
    nccl = k[k.name == NCCL]
    assert set(ops.loc[nccl["op_id"], "name"]) == {"record_param_comms"}
    assert set(ops.loc[nccl["op_id"], "kind"]) == {"all_reduce"}
    coll = t.to_pandas("collectives")
    assert set(ops.loc[coll["op_id"], "name"]) == {"record_param_comms"}


def test_python_functions_on_request(tmp_path: Path) -> None:
    out = tmp_path / "py.trnx"
    import_kineto(write_ranks(tmp_path)[:1], out, include_python=True)
    names = set(open_trace(out).to_pandas("ops")["name"])
    assert "torch/nn/modules/module.py(1501): _call_impl" in names


def test_gzip_and_bare_array_and_rank_from_file_name(tmp_path: Path) -> None:
    gz = write_ranks(tmp_path, gz=True)
    bare = tmp_path / "trainer-rank3.json"
    bare.write_text(json.dumps(rank_events(0)))  # no distributedInfo: rank 3 from the name
    out = tmp_path / "mixed.trnx"
    report = import_kineto([*gz, bare], out)
    assert report.ranks == [0, 1, 3]
    assert sorted(open_trace(out).to_pandas("tracks")["chip"].unique()) == [0, 1, 3]


def test_collectives_without_kernel_args_use_record_param_comms(tmp_path: Path) -> None:
    docs = []
    for r in (0, 1):
        d = rank_doc(r)
        for ev in d["traceEvents"]:
            if ev["name"] == NCCL:  # older PyTorch: the kernel has no collective args
                ev["args"] = {"device": 0, "stream": 20, "External id": 12}
        docs.append(d)
    paths = []
    for r, d in enumerate(docs):
        p = tmp_path / f"r{r}.json"
        p.write_text(json.dumps(d))
        paths.append(p)
    out = tmp_path / "old.trnx"
    import_kineto(paths, out)
    c = open_trace(out).to_pandas("collectives")
    assert list(c["bytes"]) == [2097152, 2097152]
    assert list(c.sort_values("chip")["wait_ns"]) == [50_000, 0]


def test_many_collectives_match_by_order_within_a_process_group(tmp_path: Path) -> None:
    """Three all-reduces per rank: the k-th of each rank is one collective."""
    paths = []
    for r in range(3):
        ev = []
        for k in range(3):
            ts = 1000 * k + 10 * r * (k + 1)  # rank r arrives 10*r*(k+1) us late
            args = {"device": 0, "stream": 20, "Collective name": "allreduce", "Process Group Name": "0",
                    "In msg nelems": 256, "dtype": "Float", "Group size": 3}
            ev.append({"ph": "X", "cat": "kernel", "name": NCCL, "pid": 0, "tid": 20, "ts": ts, "dur": 100, "args": args})
        p = tmp_path / f"rank{r}.json"
        p.write_text(json.dumps({"traceEvents": ev, "distributedInfo": {"rank": r, "world_size": 3}}))
        paths.append(p)
    out = tmp_path / "three.trnx"
    import_kineto(paths, out)
    c = open_trace(out).to_pandas("collectives")
    assert c.groupby("collective_id")["chip"].apply(sorted).tolist() == [[0, 1, 2]] * 3
    waits = c.set_index(["collective_id", "chip"])["wait_ns"]
    # collective k: the last rank (2) arrives 20*(k+1) us after rank 0
    for k in range(3):
        assert waits[(k, 0)] == 20_000 * (k + 1)
        assert waits[(k, 1)] == 10_000 * (k + 1)
        assert waits[(k, 2)] == 0


def test_duplicate_rank_is_one_sentence(tmp_path: Path) -> None:
    a, _ = write_ranks(tmp_path)
    with pytest.raises(UserError, match="are both rank 0"):
        import_kineto([a, a], tmp_path / "dup.trnx")


def test_unknown_rank_with_many_files_is_one_sentence(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(rank_events(0)))
    with pytest.raises(UserError, match="cannot tell the rank of"):
        import_kineto([tmp_path / "a.json", tmp_path / "b.json"], tmp_path / "x.trnx")


def test_existing_output_needs_overwrite(two_ranks: Path, tmp_path: Path) -> None:
    paths = sorted(tmp_path.glob("worker_rank*.json"))
    with pytest.raises(UserError, match="already exists"):
        import_kineto(paths, two_ranks)
    import_kineto(paths, two_ranks, overwrite=True)
    open_trace(two_ranks)


def test_parallel_reading_gives_the_same_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from explorer.interop.kineto import importer as KI

    paths = write_ranks(tmp_path)
    assert not KI._can_fork(paths, 2, KI._input_bytes(paths))  # small input: read one by one, whatever -j says
    monkeypatch.setattr(KI, "PARALLEL_MIN_BYTES", 0)
    if not KI._can_fork(paths, 2, 0):
        pytest.skip("this process cannot fork workers (other threads are running)")
    used = []
    real = KI._read_parallel
    monkeypatch.setattr(KI, "_read_parallel", lambda *a: used.append(a) or real(*a))
    import_kineto(paths, tmp_path / "seq.trnx")
    import_kineto(paths, tmp_path / "par.trnx", workers=2)
    assert len(used) == 1
    a, b = open_trace(tmp_path / "seq.trnx"), open_trace(tmp_path / "par.trnx")
    for name in ("tracks", "kernels", "instructions", "dma", "collectives", "ops"):
        assert a.to_pandas(name).equals(b.to_pandas(name)), name


def test_gpu_memory_samples_become_a_counter(two_ranks: Path) -> None:
    t = open_trace(two_ranks)
    tracks = t.to_pandas("tracks").set_index("track_id")
    c = t.to_pandas("counters")
    assert len(c) == 3  # the CPU allocator sample is not a GPU counter
    track = tracks.loc[c["track_id"].iloc[0]]
    assert (track["name"], track["kind"], track["unit"], track["chip"], track["core"]) == (
        "Device Memory Allocated", "counter", "bytes", 0, 0)
    assert list(c["time_ns"]) == [5_000, 60_000, 210_000]
    assert list(c["value"]) == [1000.0, 5000.0, 2000.0]


def test_tolerant_path_imports_the_same_tables(tmp_path: Path) -> None:
    """A file the fast parser refuses (here: a trailing comma) gives the same trace."""
    fast, slow = tmp_path / "rank0.json", tmp_path / "slow_rank0.json"
    text = json.dumps(rank_doc(0))
    fast.write_text(text)
    slow.write_text(text.replace("}]", "},]", 1))
    import_kineto([fast], tmp_path / "fast.trnx")
    report = import_kineto([slow], tmp_path / "slow.trnx")
    assert report.repairs  # it really took the repair path
    a, b = open_trace(tmp_path / "fast.trnx"), open_trace(tmp_path / "slow.trnx")
    for name in ("tracks", "kernels", "instructions", "dma", "collectives", "ops", "counters"):
        assert a.to_pandas(name).equals(b.to_pandas(name)), name
