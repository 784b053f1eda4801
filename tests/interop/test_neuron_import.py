"""Neuron Explorer profiles -> trnx traces: every figure against pandas on the same Parquet files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from explorer.interop.neuron_profile import import_neuron_profile
from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.profile_summary import profile_comparison
from explorer.model.analysis.summary import summarize
from interop.neuron_profiles import T_BASE, write_profile, write_ranks
from simcore.errors import UserError
from simcore.trace import open_trace

ENGINE_NAMES = ("tensor", "vector", "scalar", "gpsimd", "sync")


def trnx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True, timeout=120)


def union_ns(frame: pd.DataFrame, start: str = "start_ts", end: str = "end_ts") -> int:
    """Length of the union of [start, end) intervals (pandas + a plain loop: independent of explorer.model)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(zip(frame[start].tolist(), frame[end].tolist())):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("neuron")
    write_ranks(root / "profile", ranks=2)
    out = root / "run.trnx"
    import_neuron_profile([root / "profile"], out)
    return root / "profile", out


def read(profile: Path, rank: int, table: str) -> pd.DataFrame:
    return pq.read_table(profile / f"rank_{rank}" / f"{table}.parquet").to_pandas()


def test_rows_tracks_and_rebased_times(imported: tuple[Path, Path]) -> None:
    profile, out = imported
    t = open_trace(out)
    ins = [read(profile, r, "Instruction") for r in (0, 1)]
    assert t.row_count("instructions") == sum(len(i) for i in ins)
    assert t.row_count("dma") == sum(len(read(profile, r, "DmaPacketAggregated")) for r in (0, 1))
    assert t.row_count("collectives") == sum(len(read(profile, r, "CcOp")) for r in (0, 1))
    t0 = min(int(read(profile, r, "Metadata")["first_hw_timestamp"][0]) for r in (0, 1))
    assert t0 == T_BASE
    got = np.sort(t.instructions.column("start_ns").to_numpy())
    want = np.sort(np.concatenate([i["start_ts"].to_numpy() for i in ins]) - t0)
    assert np.array_equal(got, want)
    tracks = t.tracks.to_pandas()
    engines = tracks[tracks["kind"].isin(["tensor_matrix", "vector", "scalar", "gpsimd", "sync"])]
    # one engine row per (rank, physical core, engine): LNC=2 gives cores 0 and 1 on each chip
    assert sorted(set(zip(engines["chip"], engines["core"]))) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert set(engines["name"]) == {"TensorMatrix", "Vector", "Scalar", "GpSimd", "Sync"}
    assert t.meta["simulator"]["is_simulation"] is False
    assert t.hardware["tensor"]["rows"] == 128 and t.hardware["hbm"]["bandwidth_gbps"] == 1200.0


def test_summary_figures_match_pandas(imported: tuple[Path, Path]) -> None:
    profile, out = imported
    t = open_trace(out)
    for rank in (0, 1):
        ins = read(profile, rank, "Instruction")
        dma = read(profile, rank, "DmaPacketAggregated")
        cc = read(profile, rank, "CcOp")
        m = summarize(t, chips=[rank]).metrics
        for e in ENGINE_NAMES:
            sel = ins[ins["engine"] == e]
            busy = sum(union_ns(g) for _, g in sel.groupby("pcore_idx"))
            assert m[f"{e}_engine_active_time_ns"] == busy, e
            assert m[f"{e}_engine_instruction_count"] == len(sel)
        assert m["hardware_flops"] == ins["raw_flops"].sum()
        assert m["model_flops"] == (ins["raw_flops"] - ins["flops_transpose"]).sum()
        assert m["hardware_flops_bf16"] == pytest.approx(ins["adjusted_flops"].sum())
        assert m["hbm_read_bytes"] == ins["hbm_read_bytes"].sum()
        assert m["hbm_write_bytes"] == ins["hbm_write_bytes"].sum()
        assert m["dma_transfer_count"] == len(dma)
        assert m["dma_transfer_total_bytes"] == dma["transfer_bytes"].sum()
        dma_busy = sum(union_ns(g) for _, g in dma.groupby("pcore_idx"))
        assert m["dma_active_time_ns"] == dma_busy
        assert m["cc_op_count"] == len(cc)
        wait = (cc["start_ts"] - cc["trigger_start_ts"]).sum()
        assert m["collective_wait_ns"] == wait
        th = read(profile, rank, "Throttle")
        assert m["throttled_time_ns"] == th["duration"].sum()
        # MFU against the Metadata's array: 2 x rows x cols x clock per physical core that worked
        meta = read(profile, rank, "Metadata").iloc[0]
        peak = 2 * meta["tensor_engine_num_rows"] * meta["tensor_engine_num_cols"] * meta["tensor_engine_clock_freq"] * 1e9
        assert m["peak_bf16_tflops"] == pytest.approx(peak * 2 / 1e12)


def test_collectives_match_across_ranks(imported: tuple[Path, Path]) -> None:
    profile, out = imported
    c = open_trace(out).collectives.to_pandas()
    assert set(c["kind"]) == {"all_reduce"} and set(c["group_size"]) == {2}
    assert sorted(c["collective_id"].unique()) == [0, 1]
    for rank in (0, 1):
        cc = read(profile, rank, "CcOp").sort_values("op_id")
        mine = c[c["chip"] == rank].sort_values("collective_id")
        assert mine["rank"].tolist() == [rank, rank]
        assert mine["bytes"].tolist() == cc["input_size"].tolist()
        assert (mine["end_ns"] - mine["start_ns"]).tolist() == cc["duration_ns"].tolist()


def test_counters_and_flows(imported: tuple[Path, Path]) -> None:
    profile, out = imported
    t = open_trace(out)
    tracks = t.tracks.to_pandas().set_index("track_id")
    ctr = t.counters.to_pandas()
    ctr["name"] = tracks.loc[ctr["track_id"], "name"].to_numpy()
    ctr["chip"] = tracks.loc[ctr["track_id"], "chip"].to_numpy()
    for rank in (0, 1):
        hbm = read(profile, rank, "HbmUsage")
        mine = ctr[(ctr["chip"] == rank) & (ctr["name"] == "HBM Bandwidth")]
        assert np.allclose(np.sort(mine["value"]), np.sort(hbm["current_throughput"] / 1e9))
        sb = read(profile, rank, "SbufUsage")
        mine = ctr[(ctr["chip"] == rank) & (ctr["name"] == "State Buffer Utilisation")]
        assert np.allclose(np.sort(mine["value"]), np.sort(sb["avg_util_percent"]))
    flows = sum(len(read(profile, r, "Flow")) for r in (0, 1))
    assert t.row_count("flows") == flows  # every edge names an instruction or a DMA block


def test_hierarchy_drill_down_matches_pandas(imported: tuple[Path, Path]) -> None:
    profile, out = imported
    t = open_trace(out)
    rows = Hierarchy(t).rows()
    ins = pd.concat([read(profile, r, "Instruction").assign(rank=r) for r in (0, 1)])
    t0 = T_BASE
    layers = rows[rows["level"] == "layer"].set_index("name")
    assert sorted(layers.index) == sorted(ins["layer"].unique())
    for layer, g in ins.groupby("layer"):
        assert layers.loc[layer, "flops"] == g["raw_flops"].sum()
        assert layers.loc[layer, "start_ns"] == g["start_ts"].min() - t0
        assert layers.loc[layer, "end_ns"] == g["end_ts"].max() - t0
    ops = rows[rows["level"] == "op"].set_index("name")
    for hlo, g in ins.groupby("hlo_name"):
        assert ops.loc[hlo, "flops"] == g["raw_flops"].sum()
    kernels = rows[rows["level"] == "kernel"]
    assert len(kernels) == ins.groupby(["rank", "pcore_idx", "layer", "hlo_name"]).ngroups


def test_profile_summary_beside_ours(imported: tuple[Path, Path]) -> None:
    _, out = imported
    rows = profile_comparison(open_trace(out))
    assert {r.field for r in rows} >= {"total_time", "hardware_flops", "dma_transfer_count", "cc_op_count"}
    # the generator's Summary agrees with the tables except its made-up MFU
    assert {r.field for r in rows if r.disagrees} == {"mfu_estimated_percent"}
    r = trnx("summary", str(out), "--no-recommendations")
    assert r.returncode == 0, r.stderr
    assert "Neuron Explorer's Summary beside ours" in r.stdout
    assert "disagreements: chip 0 mfu_estimated_percent; chip 1 mfu_estimated_percent" in r.stdout


def test_missing_optional_fields_and_unknown_tables(tmp_path: Path) -> None:
    write_profile(tmp_path / "p", lnc=1, missing_optional=True)
    out = tmp_path / "run.trnx"
    import_neuron_profile([tmp_path / "p"], out)
    t = open_trace(out)
    ins = pq.read_table(tmp_path / "p" / "Instruction.parquet").to_pandas()
    m = summarize(t).metrics
    assert m["hardware_flops"] == ins["raw_flops"].fillna(0).sum()
    names = set(Hierarchy(t).rows()["name"])
    assert "(no hlo)" in names  # instructions without hlo_name are kept, under an op of their own
    c = t.collectives.to_pandas()  # no input_size: bytes from num_elements x dtype (bf16: 2)
    assert (c["bytes"] == 65536 * 2).all()
    assert t.meta["workload"]["name"] == "p"  # no profile_name: the directory's name


def test_cli_import_detects_a_profile_directory(tmp_path: Path) -> None:
    write_ranks(tmp_path / "prof", ranks=2, layers=1)
    out = tmp_path / "run.trnx"
    r = trnx("import", str(tmp_path / "prof"), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    facts = json.loads(r.stdout)
    assert facts["ranks"] == [0, 1] and facts["rows"]["instructions"] == open_trace(out).row_count("instructions")


def test_summary_and_diff_of_a_profile_directory_name_the_profile(tmp_path: Path) -> None:
    import clirun

    prof = write_ranks(tmp_path / "prof", ranks=2, layers=1)
    code, out, err = clirun.trnx("summary", prof, "--json", "--no-recommendations")
    assert code == 0, err
    assert json.loads(out)["trace"] == str(prof.resolve())  # not the private import, gone at exit
    code, out, err = clirun.trnx("summary", prof, "--no-recommendations")
    assert out.splitlines()[0] == f"trace      {prof.resolve()}"
    code, out, err = clirun.trnx("diff", prof, prof, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["a"], d["b"]) == (str(prof.resolve()), str(prof.resolve()))


def _bad(tmp: Path, how: str) -> Path:
    d = write_profile(tmp / how, layers=1, hlos=1)
    if how == "not-parquet":
        (d / "Instruction.parquet").write_text("start_ts,end_ts\n1,2\n")
    elif how == "missing-field":
        t = pq.read_table(d / "Instruction.parquet").drop(["opcode"])
        pq.write_table(t, d / "Instruction.parquet")
    elif how == "wrong-type":
        t = pq.read_table(d / "Instruction.parquet")
        t = t.set_column(t.schema.get_field_index("start_ts"), "start_ts", t.column("start_ts").cast(pa.string()))
        pq.write_table(t, d / "Instruction.parquet")
    elif how == "newer-major":
        t = pq.read_table(d / "Metadata.parquet")
        t = t.set_column(0, "profile_schema_version", pa.array(["8.0.0"]))
        pq.write_table(t, d / "Metadata.parquet")
    elif how == "null-required":
        t = pq.read_table(d / "Instruction.parquet")
        i = t.schema.get_field_index("engine")
        t = t.set_column(i, "engine", pa.array([None] * t.num_rows, pa.string()))
        pq.write_table(t, d / "Instruction.parquet")
    elif how == "negative-duration":
        t = pq.read_table(d / "Instruction.parquet")
        i = t.schema.get_field_index("duration_ns")
        t = t.set_column(i, "duration_ns", pa.array(np.full(t.num_rows, -5), pa.int64()))
        pq.write_table(t, d / "Instruction.parquet")
    elif how == "no-metadata":
        (d / "Metadata.parquet").unlink()
    return d


@pytest.mark.parametrize("how,words", [
    ("not-parquet", "is not a readable Parquet file"), ("missing-field", "lacks the required field 'opcode'"),
    ("wrong-type", "field 'start_ts' is string"), ("newer-major", "newer major version"),
    ("null-required", "missing (null) values in the required field 'engine'"),
    ("negative-duration", "negative duration"), ("no-metadata", "has no Metadata.parquet"),
])
def test_bad_profiles_one_sentence(tmp_path: Path, how: str, words: str) -> None:
    d = _bad(tmp_path, how)
    with pytest.raises(UserError, match=words.replace("(", r"\(").replace(")", r"\)")):
        import_neuron_profile([d], tmp_path / "x.trnx")
    assert not (tmp_path / "x.trnx").exists()


def test_bad_profile_cli_exit_2(tmp_path: Path) -> None:
    d = _bad(tmp_path, "newer-major")
    r = trnx("import", str(d), "-o", str(tmp_path / "x.trnx"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "8.0.0" in r.stderr
