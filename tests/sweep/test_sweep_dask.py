"""Sweeps and multi-chip captures on real Dask clusters: a LocalCluster with worker processes,
`dask scheduler` + `dask worker` started as separate processes, and a sweep killed with
SIGKILL midway then resumed -- each giving results identical to the run in one process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import simcore
from explorer.cli.main import cli
from simcore.capture.multichip.dask_runner import DaskRunner
from simcore.errors import UserError
from simcore.trace import open_trace
from sweep.cases import FIXED, GRID, results, trnx

DASK = Path(sys.executable).with_name("dask")


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            Client(c, set_as_default=False) as client:
        yield c, client


def test_sweep_on_a_local_cluster_of_worker_processes_matches_one_process(reference, cluster, tmp_path):
    c, client = cluster
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids   # real worker processes
    res = CliRunner().invoke(cli, ["sweep", *FIXED, *GRID, "--keep-traces", "--scheduler", c.scheduler_address,
                                   "-o", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s" / "results.parquet").read_bytes() == (reference / "results.parquet").read_bytes()
    kept = sorted(p.name for p in (tmp_path / "s" / "traces").iterdir())
    assert kept == sorted(p.name for p in (reference / "traces").iterdir())


def test_a_multichip_capture_spreads_its_chip_classes_over_the_cluster(cluster, tmp_path):
    _, client = cluster
    opts = dict(hardware="trn3-ultraserver-gen1", workload="llama3.1-8b", layers=4, pp=4, tp=2, batch=4)
    here = simcore.capture(out_path=tmp_path / "here.trnx", workers=1, **opts)
    there = simcore.capture(out_path=tmp_path / "there.trnx", runner=DaskRunner(client), **opts)
    a, b = open_trace(here), open_trace(there)
    assert json.loads((here / "meta.json").read_text())["capture"]["chip_classes"] == 4   # one per pipeline stage
    for table in ("kernels", "collectives", "counters", "tracks"):
        assert a.to_pandas(table).equals(b.to_pandas(table)), table


def test_trnx_capture_scheduler_refuses_single_chip_and_bad_addresses(tmp_path):
    one = CliRunner().invoke(cli, ["capture", "-w", "gemm", "--scheduler", "tcp://127.0.0.1:9", "-o",
                                   str(tmp_path / "g.trnx")])
    assert isinstance(one.exception, UserError) and "this capture runs on one chip" in str(one.exception)
    bad = CliRunner().invoke(cli, ["capture", "-H", "trn3-ultraserver-gen1", "-w", "llama3.1-8b", "--tp", "2",
                                   "--scheduler", "nowhere", "-o", str(tmp_path / "t.trnx")])
    assert str(bad.exception) == "--scheduler 'nowhere' is not a scheduler address like tcp://HOST:8786."
    assert not list(tmp_path.iterdir())


def _start(*args: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(DASK), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _scheduler_address(info: Path, deadline: float) -> str:
    """The address `dask scheduler` writes to its scheduler file. The file is not written atomically:
    it can exist and still be empty or half written (a JSONDecodeError in a loaded landing run)."""
    while True:
        try:
            return json.loads(info.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_sweep_on_dask_scheduler_and_worker_processes_matches_one_process(reference, tmp_path):
    info = tmp_path / "scheduler.json"
    scheduler = _start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                       str(info), log=tmp_path / "scheduler.log")
    worker = None
    try:
        address = _scheduler_address(info, deadline=time.monotonic() + 60)
        assert address.startswith("tcp://127.0.0.1:")
        worker = _start("worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                        log=tmp_path / "worker.log")
        proc = trnx("sweep", *FIXED, *GRID, "--scheduler", address, "-o", tmp_path / "s", timeout=240)
        assert proc.returncode == 0, proc.stderr + (tmp_path / "worker.log").read_text()
        mine, theirs = results(tmp_path / "s"), results(reference)
        assert mine.drop(columns="trace").equals(theirs.drop(columns="trace"))
        assert mine["trace"].isna().all()   # not kept: the workers removed their scratch traces
    finally:
        for p in (worker, scheduler):
            if p is not None:
                _stop(p)


def test_unreachable_scheduler_is_one_sentence_and_writes_nothing(tmp_path):
    res = CliRunner().invoke(cli, ["sweep", *FIXED, *GRID, "--scheduler", "tcp://127.0.0.1:9", "-o",
                                   str(tmp_path / "s")])
    assert isinstance(res.exception, UserError)
    assert str(res.exception).startswith("cannot reach the Dask scheduler at tcp://127.0.0.1:9 (")
    assert not (tmp_path / "s").exists()


def test_a_sweep_killed_midway_loses_no_finished_row_and_resumes(reference, tmp_path):
    out = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "-m", "explorer.cli.main", "sweep", *FIXED, *GRID, "--workers", "2",
                             "--keep-traces", "-q", "-o", str(out)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "results.parquet").exists() and 1 <= len(results(out)) < 6:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = results(out)
    assert 1 <= len(before) < 6
    resumed = trnx("sweep", "--resume", "--workers", "1", "-o", out, timeout=240)   # the rest in one process
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(before)} configuration" in resumed.stderr
    after = results(out)
    assert after.equals(results(reference))
    for _, row in before.iterrows():   # the rows finished before the kill are the same rows
        assert after[after["config"] == row["config"]].iloc[0].equals(row)
