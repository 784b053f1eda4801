"""`trnx summary` through the real command line: text, JSON, scopes and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import trnx as trnx_in_process

from model import analysis_traces as at

from explorer.model.analysis.summary import summarize
from simcore.trace import open_trace


def trnx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    return at.write(tmp_path_factory.mktemp("cli") / "basic.trnx")


def test_json_is_the_model_summary_plus_collectives_and_recommendations(basic):
    proc = trnx("summary", basic, "--json", "--per-chip")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["metrics"] == json.loads(json.dumps(summarize(open_trace(basic)).metrics))
    assert r["metrics"]["tensor_engine_active_time_percent"] == pytest.approx(22.0)
    assert r["unavailable"] == {}
    assert set(r["per_chip"]) == {"0", "1"} and r["per_chip"]["1"]["hardware_flops"] == 4_000_000
    (c,) = r["collectives"]
    assert (c["collective_id"], c["slowest_chip"], c["total_wait_ns"], c["slowest_lead_ns"]) == (1, 1, 1000, 1000)
    rules = {x["rule"] for x in r["recommendations"]}
    assert rules == {"collective_straggler", "throttling", "small_dma_transfers", "tensor_waiting_on_dma"}
    link = next(x for x in r["recommendations"] if x["rule"] == "small_dma_transfers")["links"][0]
    assert link["node"] == "kernel:100" and (link["t0"], link["t1"]) == (0, 2200)


def test_text_report_names_metrics_units_and_reasons(basic, tmp_path):
    proc = trnx("summary", basic)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in ("mfu_estimated_percent", "tensor_engine_active_time_percent", "22 %", "hbm_read_bytes",
                 "3.433 MiB", "chip 1 rank 1", "recommendations (4)", "-> kernel:100"):
        assert text in out, text
    nohw = trnx("summary", at.write(tmp_path / "nohw.trnx", hardware=None), "--no-recommendations")
    assert nohw.returncode == 0, nohw.stderr
    line = next(x for x in nohw.stdout.splitlines() if x.strip().startswith("mfu_estimated_percent"))
    assert "n/a" in line and "lacks tensor.rows" in line
    assert "recommendations" not in nohw.stdout


def test_chip_and_range_scopes(basic):
    r = json.loads(trnx("summary", basic, "--json", "--chip", "1", "--no-recommendations").stdout)
    assert r["scope"]["chips"] == [1] and r["metrics"]["hardware_flops"] == 4_000_000
    assert r["metrics"]["tensor_engine_active_time_percent"] is None
    assert "kernel-level" in r["unavailable"]["tensor_engine_active_time_percent"]
    w = json.loads(trnx("summary", basic, "--json", "--range", "1000:3050").stdout)
    assert w["metrics"]["total_time_ns"] == 2050 and w["metrics"]["vector_engine_active_time_ns"] == 550


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["/no/such.trnx"], "does not exist"),
        (["{basic}", "--chip", "9"], "chip 9 is not in this trace"),
        (["{basic}", "--range", "10-20"], "--range '10-20' is not START:END"),
        (["{basic}", "--range", "500:100"], "empty"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(basic, args, fragment):
    proc = trnx("summary", *[a.format(basic=basic) for a in args])
    assert proc.returncode == 2
    assert proc.stderr.startswith("trnx: error: ") and fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_the_scope_line_counts_in_words_a_user_reads():
    """One chip is "1 chip", not "1 chips" (the summary panel's headline says it the same way)."""
    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "gemm-4096-bf16.trnx"
    one = trnx_in_process("summary", sample, "--no-recommendations")
    assert one.code == 0 and "chips all: 1 core on 1 chip did work" in one.out, one.err
    many = trnx_in_process("summary", sample.with_name("llama3.1-70b-tp16-straggler.trnx"), "--no-recommendations",
                           "--chips", "0,1")
    assert many.code == 0 and "chips 0,1: 16 cores on 2 chips did work" in many.out, many.err
