"""`trnx sweep` in one process: rows, refusals as rows, the metrics `trnx summary` gives, the
Python API, determinism, resume, the progress bar, and what it refuses to write over."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import explorer
from explorer.cli.main import cli
from explorer.sweep.results import read_rows
from explorer.sweep.run import run_sweep
from explorer.sweep.store import SweepDir
from explorer.sweep.task import Task, run_task
from simcore.errors import UserError
from simcore.trace import open_trace
from sweep.cases import FIXED, GRID, results, trnx


def test_one_row_per_configuration_with_refusals_as_rows(reference):
    df = results(reference)
    assert list(df["config"]) == list(range(6))
    assert list(df.columns[:3]) == ["config", "tp", "batch"] and df["tp"].dtype == "int64"
    assert list(zip(df["tp"], df["batch"], df["status"])) == [
        (4, 1, "ok"), (4, 16, "refused"), (8, 1, "ok"), (8, 16, "ok"), (3, 1, "refused"), (3, 16, "refused")]
    no_fit = df.iloc[1]
    assert no_fit["fits"] == False and no_fit["hbm_bytes_per_chip"] > no_fit["hbm_capacity_bytes_per_chip"]  # noqa: E712
    assert no_fit["reason"].startswith("llama3.1-70b decode with tp=4, ep=1, dp=1, pp=1 needs 40.7 GB of HBM per rank")
    assert df.iloc[4]["reason"] == ("llama3.1-70b's 64 attention heads do not divide over --tp 3 chips; "
                                    "use a divisor of 64 such as 2 or 4.") or "do not divide" in df.iloc[4]["reason"]
    for reason in df["reason"].dropna():
        assert reason.endswith(".") and "\n" not in reason and "Traceback" not in reason
    ok = df[df["status"] == "ok"]
    assert ok["reason"].isna().all() and (ok["fits"] == True).all()  # noqa: E712
    assert (ok["chips_used"] == ok["tp"] // 4).all() and (ok["tokens_per_step"] == ok["batch"]).all()   # 4 ranks a chip
    assert ok["trace"].tolist() == ["traces/0000-tp=4-batch=1.trnx", "traces/0002-tp=8-batch=1.trnx",
                                    "traces/0003-tp=8-batch=16.trnx"]
    assert sorted(p.name for p in (reference / "traces").iterdir()) == [Path(t).name for t in ok["trace"]]


def test_metrics_are_the_numbers_trnx_summary_gives_for_the_trace(reference):
    df = results(reference)
    for _, row in df[df["status"] == "ok"].iterrows():
        res = CliRunner().invoke(cli, ["summary", str(reference / row["trace"]), "--json", "--no-recommendations"])
        assert res.exit_code == 0, res.output
        report = json.loads(res.output)
        for name, value in report["step"].items():
            assert row[name] == value, name
        for name in ("mfu_estimated_percent", "mbu_estimated_percent", "cc_op_active_time_percent"):
            assert row[name] == report["metrics"][name], name
    tp2 = df[(df["tp"] == 8) & (df["status"] == "ok")]
    assert (tp2["cc_op_active_time_percent"] > 0).all()   # tensor parallel: all-reduces in every step


def test_open_sweep_and_one_line_pandas_agree(reference):
    sweep = explorer.open_sweep(reference)
    assert sweep.results.equals(pd.read_parquet(reference / "results.parquet"))
    assert explorer.open_sweep(reference / "results.parquet").grid_keys == ["tp", "batch"]
    assert sweep.fixed == {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1}
    assert sweep.options(3) == {**sweep.fixed, "tp": 8, "batch": 16}
    assert sweep.trace_path(3) == reference / "traces" / "0003-tp=8-batch=16.trnx"
    assert sweep.trace_path(1) is None
    front = sweep.pareto("step_time_ns", "tokens_per_s_per_chip")
    assert list(front["config"]) == sorted(front["config"], key=lambda c: sweep.results.loc[c, "step_time_ns"])
    ok = sweep.results[sweep.results["status"] == "ok"]
    for _, r in ok.iterrows():   # nothing off the front beats a front point on both
        dominated = ((front["step_time_ns"] <= r["step_time_ns"]) & (front["tokens_per_s_per_chip"] >= r["tokens_per_s_per_chip"]))
        assert dominated.any()


def test_same_seed_same_file_and_resume_runs_only_what_is_missing(reference, tmp_path):
    again = tmp_path / "again"
    res = CliRunner().invoke(cli, ["sweep", *FIXED, *GRID, "--workers", "1", "--keep-traces", "-o", str(again)])
    assert res.exit_code == 0, res.output
    assert (again / "results.parquet").read_bytes() == (reference / "results.parquet").read_bytes()
    assert "6 configurations (3 ok, 3 refused); 6 run now" in res.stdout
    assert "most tokens/s per chip:" in res.stdout and "tp=8 batch=16" in res.stdout
    finished = (again / "results.parquet").stat().st_mtime_ns
    res = CliRunner().invoke(cli, ["sweep", "--resume", "-o", str(again)])
    assert res.exit_code == 0, res.output
    assert "0 run now" in res.stdout and (again / "results.parquet").stat().st_mtime_ns == finished


def test_a_failing_configuration_is_a_failed_row_and_resume_runs_it_again(tmp_path, monkeypatch):
    import explorer.sweep.task as task_module

    real = task_module._capture_and_measure

    def broken(task, res, target, in_place):
        if task.config == 2:
            raise RuntimeError("simulated bug")
        return real(task, res, target, in_place)

    monkeypatch.setattr(task_module, "_capture_and_measure", broken)
    fixed = {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1}
    run = run_sweep(tmp_path / "s", fixed, ["tp=4,8,3", "batch=1,16"], workers=1)
    row = run.rows[2]
    assert row["status"] == "failed" and row["reason"] == ("the capture failed because of an internal error "
                                                           "(RuntimeError: simulated bug).")
    assert [r["status"] for r in run.rows].count("ok") == 2
    monkeypatch.setattr(task_module, "_capture_and_measure", real)
    again = run_sweep(tmp_path / "s", resume=True, workers=1)
    assert again.ran == 1 and again.rows[2]["status"] == "ok"


def test_a_worker_without_the_sweep_directory_sends_the_kept_trace_back(reference, tmp_path):
    task = Task(3, {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1, "tp": 8, "batch": 16},
                str(tmp_path / "not-here"), "0" * 32, "0003-tp=8-batch=16.trnx")
    outcome = run_task(task)
    assert outcome.row["status"] == "ok" and outcome.row["trace"] == "traces/0003-tp=8-batch=16.trnx"
    assert "meta.json" in outcome.trace_files
    sweep, _ = SweepDir.start(tmp_path / "client", SweepDir.open(reference).spec, resume=False)
    path = sweep.install_trace("0003-tp=8-batch=16.trnx", outcome.trace_files, task.options)
    mine, theirs = open_trace(path), open_trace(reference / "traces" / "0003-tp=8-batch=16.trnx")
    assert mine.to_pandas("kernels").equals(theirs.to_pandas("kernels"))
    (sweep.traces_dir / "0004-notes.trnx").mkdir()
    (sweep.traces_dir / "0004-notes.trnx" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="exists and is not this configuration's trace; it was left alone"):
        sweep.install_trace("0004-notes.trnx", outcome.trace_files, task.options)
    assert sweep.install_trace("0003-tp=8-batch=16.trnx", outcome.trace_files, task.options) == path  # its own: kept
    assert (sweep.traces_dir / "0004-notes.trnx" / "notes.txt").read_text() == "mine"


START = [*FIXED, *GRID]


@pytest.mark.parametrize("setup, args, message", [
    ("notes", START, r"is not empty and holds no sweep; choose a new or empty directory \(-o\)\.$"),
    ("file", START, r"exists and is not a directory; choose a new or empty directory for the sweep \(-o\)\.$"),
    ("sweep", START, r"already holds a sweep \(6 of 6 configurations finished\); pass --resume to finish it, or "
                     r"choose another -o\.$"),
    ("sweep", [*FIXED, "--grid", "tp=4,8", "--resume"], r"holds a different sweep \(.*--grid tp=4,8,3 --grid "
                                                        r"batch=1,16\); resume it with the same options"),
    ("sweep", [*FIXED, "--resume"], r"--resume without --grid takes the options recorded in the sweep; leave the "
                                    r"others off too\.$"),
    ("none", ["--resume"], r"holds no sweep to resume; give the options and --grid to start one\.$"),
    ("none", [*START, "--workers", "2", "--scheduler", "tcp://x:1"],
     r"--workers starts local processes and --scheduler uses a cluster's workers; give one of them\.$"),
])
def test_refuses_to_write_over_what_it_did_not_make(reference, tmp_path, setup, args, message):
    out = tmp_path / "out"
    if setup == "notes":
        out.mkdir()
        (out / "notes.txt").write_text("keep me")
    elif setup == "file":
        out.write_text("keep me")
    elif setup == "sweep":
        out = reference
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")} if out.is_dir() else None
    if setup == "notes":   # once through the real command line: exit 2, one line
        proc = trnx("sweep", *args, "-o", out)
        assert proc.returncode == 2 and proc.stderr.startswith("trnx: error: "), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and re.search(message, proc.stderr.strip())
    res = CliRunner().invoke(cli, ["sweep", *map(str, args), "-o", str(out)])
    assert isinstance(res.exception, UserError) and re.search(message, str(res.exception)), res.output
    if setup == "notes":
        assert (out / "notes.txt").read_text() == "keep me" and len(list(out.iterdir())) == 1
    if setup == "file":
        assert out.read_text() == "keep me"
    if before is not None:
        assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    if setup == "none":
        assert not out.exists()


def test_progress_bar_on_a_terminal_only(tmp_path):
    primary, secondary = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", "sweep", "-w", "gemm", "--grid",
                           "shape=128,128,128;256,256,256", "--workers", "1", "-o", str(tmp_path / "tty")],
                          stdout=subprocess.PIPE, stderr=secondary, text=True)
    os.close(secondary)
    err = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(primary)
    assert proc.returncode == 0
    assert b"sweep" in err and b"2/2" in err
    piped = CliRunner().invoke(cli, ["sweep", "-w", "gemm", "--grid", "shape=128,128,128;256,256,256", "--workers",
                                     "1", "-o", str(tmp_path / "pipe")])
    assert piped.exit_code == 0 and piped.stderr == "" and "wrote" in piped.stdout


def test_resume_reuses_a_kept_trace_whose_row_was_lost_and_never_replaces_anything_else(reference, tmp_path):
    out = tmp_path / "s"
    shutil.copytree(reference, out)
    sweep = SweepDir.open(out)
    rows = read_rows(out / "results.parquet")
    kept = out / "traces" / "0000-tp=4-batch=1.trnx"
    mine = out / "traces" / "0002-tp=8-batch=1.trnx"
    shutil.rmtree(mine)
    mine.mkdir()
    (mine / "notes.txt").write_text("not a trace")
    sweep.write([r for r in rows if r["config"] not in (0, 2)])   # as if killed before these rows were recorded
    stamp = {p: p.stat().st_mtime_ns for p in kept.rglob("*")}
    run = run_sweep(out, resume=True, workers=1)
    assert run.ran == 2
    assert run.rows[0] == rows[0]   # the same row, measured on the same trace
    assert {p: p.stat().st_mtime_ns for p in kept.rglob("*")} == stamp   # reused as it was, not captured again
    assert run.rows[2]["status"] == "failed"
    assert run.rows[2]["reason"] == f"{mine} exists and is not this configuration's trace; it was left alone (move " \
                                    "it away and --resume)."
    assert (mine / "notes.txt").read_text() == "not a trace" and len(list(mine.iterdir())) == 1


def test_a_sweep_directory_inside_a_trace_is_refused_and_nothing_is_left_in_the_trace(tmp_path):
    """-o inside a trace directory is one sentence before anything is made: the sweep directory used to
    be created first and left behind in the trace when the sweep file's write was refused, which then
    made `trnx capture --overwrite` refuse that trace as holding something trnx did not write."""
    from clirun import one_sentence
    from clirun import trnx as trnx_in_process
    from model.timeline_traces import write_timeline_trace

    trace = write_timeline_trace(tmp_path / "run.trnx")
    before = sorted(p.name for p in trace.iterdir())
    code, _, err = trnx_in_process("sweep", *START, "-o", trace / "sweep")
    assert code == 2 and "inside the trace" in one_sentence(err), err
    assert sorted(p.name for p in trace.iterdir()) == before
