"""`trnx query`: DuckDB SQL over a trace, checked against pandas on the same tables."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import clirun
from simcore.trace import open_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
DECODE = SAMPLES / "llama3.1-8b-decode.trnx"
TP16 = SAMPLES / "llama3.1-70b-tp16-straggler.trnx"  # tables partitioned per chip


def test_group_by_equals_pandas(capsys):
    code, out, err = clirun.trnx("query", DECODE, "SELECT opcode, count(*) AS n, sum(dur_ns) AS total, "
                          "avg(dur_ns) AS mean, max(dur_ns) AS longest FROM instructions GROUP BY opcode", "--json")
    assert code == 0, err
    got = pd.DataFrame(json.loads(out)).set_index("opcode").sort_index()
    df = open_trace(DECODE).to_pandas("instructions").astype({"opcode": str})
    want = df.groupby("opcode")["dur_ns"].agg(n="count", total="sum", mean="mean", longest="max").sort_index()
    assert list(got.index) == [str(x) for x in want.index]
    assert (got["n"].to_numpy() == want["n"].to_numpy()).all()
    assert (got["total"].to_numpy() == want["total"].to_numpy()).all()  # SUM's HUGEINT comes back as an exact integer
    assert got["mean"].to_numpy() == pytest.approx(want["mean"].to_numpy(), rel=1e-12)
    assert (got["longest"].to_numpy() == want["longest"].to_numpy()).all()


def test_join_over_partitioned_tables_equals_pandas(capsys):
    sql = ("SELECT o.name AS op, c.chip, sum(c.wait_ns) AS wait FROM collectives c JOIN ops o USING (op_id) "
           "GROUP BY 1, 2 ORDER BY 1, 2")
    code, out, err = clirun.trnx("query", TP16, sql, "--csv")
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    t = open_trace(TP16)
    assert t.partition_chips("collectives")  # the sample really is partitioned: the view reads every chip
    c, o = t.to_pandas("collectives"), t.to_pandas("ops")[["op_id", "name"]]
    m = c.merge(o, on="op_id")
    m["name"] = m["name"].astype(str)
    want = m.groupby(["name", "chip"])["wait_ns"].sum().reset_index().sort_values(["name", "chip"], kind="stable")
    assert len(got) == len(want) > 16
    assert got["op"].tolist() == want["name"].tolist()
    assert got["chip"].tolist() == want["chip"].tolist()
    assert got["wait"].tolist() == want["wait_ns"].tolist()


def test_text_table_and_parquet_output(capsys, tmp_path):
    code, out, _ = clirun.trnx("query", DECODE, "SELECT name, dur_ns FROM kernels ORDER BY dur_ns DESC", "--rows", "3")
    lines = out.splitlines()
    k = open_trace(DECODE).to_pandas("kernels").sort_values("dur_ns", ascending=False)
    assert code == 0 and lines[0].split() == ["name", "dur_ns"]
    assert lines[2].split() == [str(k["name"].iloc[0]), str(k["dur_ns"].iloc[0])]
    assert f"{len(k) - 3:,} more rows" in lines[-1]
    target = tmp_path / "slow.parquet"
    code, _, err = clirun.trnx("query", DECODE, "SELECT * FROM kernels WHERE dur_ns > 10000", "-o", target)
    assert code == 0 and "wrote" in err
    back = pq.read_table(target).to_pandas()
    assert len(back) == (k["dur_ns"] > 10000).sum() and set(back["dur_ns"]) == set(k.loc[k["dur_ns"] > 10000, "dur_ns"])
    assert [p.name for p in tmp_path.iterdir()] == ["slow.parquet"]  # written atomically: no temporary left


@pytest.mark.parametrize("sql, says", [
    ("SELEC opcode FROM instructions", "not valid SQL"),
    ("SELECT * FROM no_such_table", "the trace's tables are tracks, instructions"),
    ("SELECT nope FROM kernels", "the query failed"),
    ("DROP VIEW kernels", "read-only"),
    ("CREATE TABLE x AS SELECT 1", "read-only"),
    ("SELECT 1; SELECT 2", "one SQL statement"),
    ("SELECT * FROM read_csv('/etc/passwd')", "not other files"),
])
def test_bad_or_writing_sql_is_one_sentence_exit_2(capsys, sql, says):
    code, out, err = clirun.trnx("query", DECODE, sql)
    assert code == 2 and out == ""
    assert err.startswith("trnx: error: ") and says in err and len(err.strip().splitlines()) == 1


def test_copy_cannot_write_a_file(capsys, tmp_path):
    target = tmp_path / "leak.csv"
    code, _, err = clirun.trnx("query", DECODE, f"COPY kernels TO '{target}'")
    assert code == 2 and "read-only" in err and not target.exists()


def test_what_the_read_only_rule_lets_through_is_what_it_says(capsys):
    """The refusal names the statements that run, and each of them does run."""
    code, _, err = clirun.trnx("query", DECODE, "DELETE FROM kernels")
    allowed = err.split("only ")[-1]
    assert code == 2 and allowed.startswith("SELECT (and WITH ... SELECT, EXPLAIN, DESCRIBE, SHOW)")
    for sql in ("WITH k AS (SELECT * FROM kernels) SELECT count(*) FROM k", "EXPLAIN SELECT 1", "DESCRIBE kernels",
                "SHOW TABLES"):
        code, out, err = clirun.trnx("query", DECODE, sql)
        assert code == 0 and out, (sql, err)


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_o_never_replaces_a_file_it_did_not_write_without_overwrite(capsys, tmp_path, suffix):
    """`-o` onto a file already there (the user's) is refused in one sentence before the query runs, and
    the file keeps its bytes; --overwrite replaces a plain file, never a directory or a symlink."""
    mine = tmp_path / f"mine{suffix}"
    mine.write_bytes(b"my own notes\n")
    code, out, err = clirun.trnx("query", DECODE, "SELECT name FROM kernels", "-o", mine)
    assert code == 2 and out == "" and "already exists" in clirun.one_sentence(err) and "--overwrite" in err
    assert mine.read_bytes() == b"my own notes\n" and sorted(p.name for p in tmp_path.iterdir()) == [mine.name]
    code, _, err = clirun.trnx("query", DECODE, "SELECT name FROM kernels", "-o", mine, "--overwrite")
    assert code == 0, err
    assert mine.read_bytes() != b"my own notes\n" and sorted(p.name for p in tmp_path.iterdir()) == [mine.name]
    (tmp_path / "d.csv").mkdir()
    (tmp_path / "link.csv").symlink_to(mine)
    for target in ("d.csv", "link.csv"):
        code, _, err = clirun.trnx("query", DECODE, "SELECT 1", "-o", tmp_path / target, "--overwrite")
        assert code == 2, err
        clirun.one_sentence(err)
    assert (tmp_path / "d.csv").is_dir() and (tmp_path / "link.csv").is_symlink()


def test_overwrite_without_o_is_refused(capsys):
    code, _, err = clirun.trnx("query", DECODE, "SELECT 1", "--overwrite")
    assert code == 2 and "--overwrite" in clirun.one_sentence(err)
