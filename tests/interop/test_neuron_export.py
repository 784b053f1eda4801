"""`trnx export --format neuron-explorer`: Neuron Explorer's tables, read by a Neuron-style pandas
script, and the export -> import round trip of every bundled sample."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from explorer.export import FORMATS
from explorer.interop.neuron_profile import import_neuron_profile
from explorer.interop.neuron_profile import schema as NS
from explorer.model.scope import Scope
from explorer.model.analysis.summary import summarize
from explorer.model.memory import load_memory
from simcore.trace import open_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_traces").glob("*.trnx"))


def same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_export_import_round_trips_rows_and_summary(tmp_path: Path, sample: Path) -> None:
    t = open_trace(sample)
    FORMATS["neuron-explorer"](t, tmp_path / "prof", {})
    import_neuron_profile([tmp_path / "prof"], tmp_path / "back.trnx")
    u = open_trace(tmp_path / "back.trnx")
    # every table but the simulator's own sbuf_allocations, which Neuron Explorer's profile has no table for
    kept = [n for n in t.table_names if n != "sbuf_allocations"]
    assert {n: u.row_count(n) for n in kept} == {n: t.row_count(n) for n in kept}
    assert u.row_count("sbuf_allocations") == 0 and "imported from a profile" in str(load_memory(u).reason)
    a, b = summarize(t).metrics, summarize(u).metrics
    assert [k for k in a if not same(a[k], b[k])] == []
    assert u.hardware == t.hardware and u.meta["simulator"]["is_simulation"] is True


def test_tables_follow_the_schema_and_a_neuron_script_reads_them(tmp_path: Path) -> None:
    sample = ROOT / "sample_traces" / "llama3.1-8b-decode.trnx"
    out = tmp_path / "prof"
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "export", str(sample), "--format", "neuron-explorer",
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for f in out.glob("*.parquet"):
        spec = NS.TABLES[f.stem]
        schema = pq.read_schema(f)
        for field in spec.fields:
            if field.required:
                assert field.name in schema.names, (f.stem, field.name)
            if field.name in schema.names:
                assert schema.field(field.name).type == field.arrow, (f.stem, field.name)
    meta = pd.read_parquet(out / "Metadata.parquet").iloc[0]
    assert meta["profile_schema_version"] == "7.4.0" and bool(meta["is_simulation"])
    # what a Neuron Explorer user's script computes from the tables, against our summary
    ours = summarize(open_trace(sample)).metrics
    summary = pd.read_parquet(out / "Summary.parquet").iloc[0]
    active = pd.read_parquet(out / "ActiveTime.parquet")
    ins = pd.read_parquet(out / "Instruction.parquet")
    dma = pd.read_parquet(out / "DmaPacketAggregated.parquet")
    assert active.loc[active["engine"] == "tensor", "duration_ns"].sum() == ours["tensor_engine_active_time_ns"]
    assert summary["tensor_engine_active_time"] == pytest.approx(ours["tensor_engine_active_time_ns"] / 1e9)
    assert (ins["engine"] == "vector").sum() == ours["vector_engine_instruction_count"] == summary["vector_engine_instruction_count"]
    assert ins["raw_flops"].sum() == open_trace(sample).instructions.column("flops").to_numpy().sum()
    assert summary["hardware_flops"] == round(ours["hardware_flops"])  # kernels of every core, detailed or not
    assert len(dma) == summary["dma_transfer_count"] and dma["transfer_bytes"].sum() == summary["dma_transfer_total_bytes"]
    assert summary["mfu_estimated_percent"] == pytest.approx(ours["mfu_estimated_percent"])
    fields = pd.read_parquet(out / "SchemaFields.parquet")
    assert set(fields["table_name"]) >= {"Instruction", "DmaPacket", "Flow", "Summary", "Metadata", "SchemaFields"}
    assert fields.query("table_name == 'Instruction' and field_name == 'start_ts'")["field_unit"].item() == "nanoseconds"
    hlo = pd.read_parquet(out / "HloInstruction.parquet")
    assert set(ins["hlo_name"].dropna()) <= set(hlo["hlo_name"])


def test_multi_chip_export_is_one_profile_per_logical_core(tmp_path: Path) -> None:
    """Neuron Explorer profiles one logical NeuronCore (rank) each: chips 0 and 3 of the TP=16 x DP=4 sample
    (4 logical cores of 2 physical cores a chip) are 8 profiles, `pcore_idx` within the logical core, and
    the import puts every row back on its chip and physical core."""
    sample = ROOT / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"
    t = open_trace(sample)
    FORMATS["neuron-explorer"](t, tmp_path / "prof", {"scope": Scope(chips=(0, 3))})
    assert sorted(p.name for p in (tmp_path / "prof").iterdir()) == [f"rank_{r}" for r in (0, 1, 12, 13, 14, 15, 2, 3)]
    rank13 = tmp_path / "prof" / "rank_13"
    cc = pd.read_parquet(rank13 / "CcOp.parquet")
    assert set(cc["operation"]) <= {"AllReduce", "AllGather"} and cc["replica_group"].iloc[0] == str([list(range(16))])
    assert (cc["trnx_rank"] == 13).all()   # its own part of each collective, the rank in its TP group
    meta = pd.read_parquet(rank13 / "Metadata.parquet").iloc[0]
    assert (meta["neuron_device_idx"], meta["neuroncore_idx"], meta["num_physical_cores"]) == (3, 1, 2)
    assert bool(meta["vnc_enabled"]) and meta["trnx_lcore"] == 1
    kernels = pd.read_parquet(rank13 / "PenguinInstruction.parquet")
    assert set(kernels["trnx_pcore_idx"]) == {2, 3}   # physical cores 2 and 3 of chip 3
    sbuf = pd.read_parquet(rank13 / "SbufUsage.parquet")
    assert set(sbuf["pcore_idx"]) <= {0, 1}
    # the chip's shared HBM counter travels once, with its first logical core
    assert (tmp_path / "prof" / "rank_12" / "HbmUsage.parquet").exists() and not (rank13 / "HbmUsage.parquet").exists()
    import_neuron_profile([tmp_path / "prof"], tmp_path / "back.trnx")
    u = open_trace(tmp_path / "back.trnx")
    k, back = t.to_pandas("kernels"), u.to_pandas("kernels")
    k = k[k.chip.isin([0, 3])]
    assert sorted(zip(back.chip, back.core, back.start_ns)) == sorted(zip(k.chip, k.core, k.start_ns))
    assert len(u.to_pandas("collectives")) == int(t.to_pandas("collectives").chip.isin([0, 3]).sum())


def test_export_refuses_an_existing_path(tmp_path: Path) -> None:
    (tmp_path / "prof").mkdir()
    (tmp_path / "prof" / "keep.txt").write_text("mine")
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "export", str(SAMPLES[0]), "--format", "neuron-explorer",
                        "-o", str(tmp_path / "prof")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "already exists" in r.stderr
    assert (tmp_path / "prof" / "keep.txt").read_text() == "mine"
