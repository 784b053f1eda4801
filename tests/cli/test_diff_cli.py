"""`trnx diff A B` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from model import analysis_traces as at


def trnx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("diffcli")
    a = at.write(d / "bf16.trnx")
    t = at.basic_tables()
    t["kernels"]["dur_ns"][3] = 2000  # chip 1's matmul: 5000 -> 2000 ns
    t["ops"]["dur_ns"][2] = 4000
    t["instructions"]["dur_ns"][5] = 250
    b = at.write(d / "mx.trnx", t)
    return a, b


def test_text_shows_metric_engine_op_and_kernel_deltas(pair):
    proc = trnx("diff", *pair)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "bf16.trnx" in out and "mx.trnx" in out
    assert "vector" in out and "-250 ns" in out
    assert "ops: 5 compared, 1 changed" in out
    assert "-1 us" in out and "* / layer 0 / attention.qkv_proj #0" in out
    assert "-3 us" in out and ":: matmul_qkv" in out


def test_metrics_a_kernel_level_trace_cannot_compute_read_n_a_not_nan(tmp_path):
    """Engine and DMA percentages need instruction detail; without it both sides say n/a."""
    t = at.basic_tables()
    for table in ("instructions", "dma", "flows"):
        t[table] = {c: [] for c in t[table]}
    a = at.write(tmp_path / "a.trnx", t)
    b = at.write(tmp_path / "b.trnx", t)
    proc = trnx("diff", a, b)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("dma_active_time_percent"))
    assert row.split()[1:3] == ["n/a", "n/a"]
    assert "nan" not in proc.stdout


def test_json_has_every_table_and_top_limits_rows(pair):
    r = json.loads(trnx("diff", *pair, "--json").stdout)
    assert set(r) == {"a", "b", "metrics", "engines", "ops", "kernels", "measured", "by_name"}
    ops = {o["key"]: o for o in r["ops"]}
    assert ops["* / layer 0 / attention.qkv_proj #0"]["delta_ns"] == -1000
    vec = next(e for e in r["engines"] if e["engine"] == "vector")
    assert vec["delta_ns"] == -250
    small = json.loads(trnx("diff", *pair, "--json", "--top", "1").stdout)
    assert len(small["ops"]) == 1 and small["ops"][0]["delta_ns"] == -1000


@pytest.mark.parametrize("which", [0, 1])
def test_missing_trace_is_one_line_exit_2(pair, which, tmp_path):
    args = list(pair)
    args[which] = tmp_path / "nope.trnx"
    proc = trnx("diff", *args)
    assert proc.returncode == 2 and proc.stderr.startswith("trnx: error: ")
    assert "nope.trnx does not exist" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_not_a_trace_is_rejected(pair, tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    proc = trnx("diff", pair[0], f)
    assert proc.returncode == 2 and "not a trace directory" in proc.stderr


def test_the_counts_above_the_rows_are_the_models(pair):
    """`trnx diff`'s "N compared, N changed, N only in A, N only in B" lines are `matching` of the
    diff's tables, which the compare window states too."""
    from clirun import trnx as trnx_in_process

    from explorer.model.analysis.diff import diff, matching
    from simcore.trace import open_trace

    code, out, err = trnx_in_process("diff", *pair)
    assert code == 0, err
    d = diff(open_trace(pair[0]), open_trace(pair[1]))
    for title, frame in (("ops", d.ops), ("kernels (per op and name, summed over instances)", d.kernels)):
        m = matching(frame)
        assert m.rows == len(frame) and m.matched + m.only_a + m.only_b == m.rows
        assert f"{title}: {m.rows} compared, {m.changed} changed, {m.only_a} only in A, {m.only_b} only in B" in out
    assert matching(d.ops).changed == 1  # the one op whose duration the pair changes
