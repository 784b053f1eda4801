"""`trnx diff measured simulated`: a measured profile (Neuron Explorer tables without our extensions,
some ops slower) against the simulation, aligned by name, checked against pandas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from explorer.export import FORMATS
from explorer.interop.neuron_profile import import_neuron_profile
from explorer.model.analysis.diff import diff
from simcore.trace import open_trace

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "sample_traces" / "llama3.1-8b-decode.trnx"
SLOW = "attention.core"


def as_measured(prof: Path) -> None:
    """What a real profile holds: Neuron's fields only, is_simulation false, and SLOW taking three times as long."""
    for f in list(prof.glob("*.parquet")):
        if f.stem.startswith("Trnx"):
            f.unlink()
            continue
        t = pq.read_table(f)
        t = t.drop([c for c in t.column_names if c.startswith("trnx_")])
        if f.stem == "Metadata":
            t = t.set_column(t.schema.get_field_index("is_simulation"), "is_simulation", pa.array([False]))
        if f.stem == "Instruction":
            df = t.to_pandas()
            slow = df["hlo_name"] == SLOW  # each instance stretched 3x in time from its first instruction
            first = df[slow].groupby("layer")["start_ts"].transform("min")
            df.loc[slow, "start_ts"] = first + (df.loc[slow, "start_ts"] - first) * 3
            df.loc[slow, "duration_ns"] *= 3
            df.loc[slow, "end_ts"] = df.loc[slow, "start_ts"] + df.loc[slow, "duration_ns"]
            t = pa.Table.from_pandas(df, schema=t.schema, preserve_index=False)
        pq.write_table(t, f)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("measured")
    FORMATS["neuron-explorer"](open_trace(SIM), root / "prof", {})
    as_measured(root / "prof")
    import_neuron_profile([root / "prof"], root / "measured.trnx")
    return root / "prof", root / "measured.trnx"


def test_ops_align_by_name_with_ratios_against_pandas(measured: tuple[Path, Path]) -> None:
    prof, path = measured
    m, s = open_trace(path), open_trace(SIM)
    assert m.meta["simulator"]["is_simulation"] is False
    d = diff(m, s)
    assert d.measured == (True, False) and d.measured_vs_simulated
    ops = d.by_name[d.by_name["level"] == "op"].set_index("name")
    ins = pd.read_parquet(prof / "Instruction.parquet")
    # measured: each (layer, hlo) op spans its instructions; the name's time is the sum over layers
    hull = ins.groupby(["layer", "hlo_name"]).agg(s=("start_ts", "min"), e=("end_ts", "max"))
    want_a = (hull["e"] - hull["s"]).groupby(level="hlo_name").sum()
    sim_ops = s.ops.to_pandas()
    want_b = sim_ops[sim_ops["level"] == "op"].groupby("name")["dur_ns"].sum()
    for name in want_a.index:
        assert ops.loc[name, "a_time_ns"] == want_a[name], name
        assert ops.loc[name, "b_time_ns"] == want_b[name], name
        assert ops.loc[name, "ratio"] == pytest.approx(want_b[name] / want_a[name])
    # sorted by |B - A|: the op made slower in the "measurement" is the worst
    matched = d.by_name[(d.by_name["level"] == "op") & (d.by_name["status"] == "matched")]
    assert matched["name"].iloc[0] == SLOW and matched["ratio"].iloc[0] < 0.5
    deltas = d.by_name[d.by_name["level"] == "op"]["delta_ns"].abs().to_numpy()
    assert (deltas[:-1] >= deltas[1:]).all()
    layers = d.by_name[d.by_name["level"] == "layer"]
    sim_layers = set(sim_ops.loc[sim_ops["level"] == "layer", "name"])
    assert set(layers.loc[layers["status"] == "matched", "name"]) == sim_layers  # every simulated layer found


def test_cli_aligns_measured_and_simulated_by_name(measured: tuple[Path, Path]) -> None:
    prof, path = measured
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "diff", str(prof), str(SIM), "--top", "3"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "(measured)" in r.stdout and "(simulated)" in r.stdout
    ops = r.stdout.split("ops by name:")[1].split("kernels by name:")[0]
    assert ops.strip().splitlines()[2].rstrip().endswith(SLOW)  # first row under the header
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "diff", str(path), str(SIM), "--json"],
                       capture_output=True, text=True, timeout=300)
    by_name = json.loads(r.stdout)["by_name"]
    assert {x["level"] for x in by_name} == {"layer", "op", "kernel"}
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "diff", str(path), str(SIM), "--align", "path"],
                       capture_output=True, text=True, timeout=300)
    assert "ops by name" not in r.stdout and "compared" in r.stdout
