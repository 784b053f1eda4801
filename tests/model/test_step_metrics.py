"""Step throughput (explorer.model.analysis.step): tokens per second per chip and HBM per chip of real
captures, and `trnx summary` reporting the same numbers."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import simcore
from explorer.cli.main import cli
from explorer.model.analysis.step import step_metrics
from explorer.model.analysis.summary import summarize
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("step")
    out = {}
    for name, opts in {
        "decode": dict(workload="llama3.1-8b", layers=1, batch=4, context=512),
        "prefill": dict(workload="llama3.1-8b", layers=1, phase="prefill", batch=2, seq=256),
        "tp": dict(hardware="trn3-ultraserver-gen1", workload="llama3.1-8b", layers=1, batch=4, tp=16),   # 4 chips
        "gemm": dict(workload="gemm", shape="256,256,256"),
    }.items():
        out[name] = d / f"{name}.trnx"
        simcore.capture(out_path=out[name], **opts)
    return out


def metrics_of(path):
    trace = open_trace(path)
    return step_metrics(trace, summarize(trace).metrics["total_time_ns"]), trace


def test_decode_makes_one_token_per_sequence_per_step(traces):
    m, trace = metrics_of(traces["decode"])
    assert m["step_time_ns"] == trace.duration_ns
    assert m["tokens_per_step"] == 4 and m["chips_used"] == 1
    assert m["tokens_per_s"] == pytest.approx(4 / (trace.duration_ns * 1e-9))
    assert m["tokens_per_s_per_chip"] == m["tokens_per_s"]
    mem = trace.meta["capture"]["memory_bytes"]
    assert m["hbm_bytes_per_chip"] == sum(mem.values()) and mem["weights"] > 15e9   # 8B parameters in BF16
    assert m["hbm_capacity_bytes_per_chip"] == trace.hardware["hbm"]["capacity_bytes"] and m["fits"] is True


def test_prefill_counts_every_prompt_token_and_tp_divides_by_chips(traces):
    m, _ = metrics_of(traces["prefill"])
    assert m["tokens_per_step"] == 2 * 256
    tp, trace = metrics_of(traces["tp"])
    assert tp["chips_used"] == 4 and tp["tokens_per_s_per_chip"] == pytest.approx(tp["tokens_per_s"] / 4)
    single, _ = metrics_of(traces["decode"])
    assert tp["hbm_bytes_per_chip"] < single["hbm_bytes_per_chip"] / 3   # weights split over 16 ranks, 4 a chip


def test_micro_benchmarks_have_no_tokens_or_model_memory(traces):
    m, _ = metrics_of(traces["gemm"])
    assert m["step_time_ns"] > 0
    assert m["tokens_per_step"] is None and m["tokens_per_s"] is None and m["hbm_bytes_per_chip"] is None
    assert m["fits"] is None


def test_trnx_summary_reports_the_same_step_numbers(traces):
    res = CliRunner().invoke(cli, ["summary", str(traces["tp"]), "--json", "--no-recommendations"])
    assert res.exit_code == 0, res.output
    m, _ = metrics_of(traces["tp"])
    assert json.loads(res.output)["step"] == json.loads(json.dumps(m))
    text = CliRunner().invoke(cli, ["summary", str(traces["tp"]), "--no-recommendations"]).output
    assert "tokens_per_s_per_chip" in text and "tokens/s" in text
    scoped = json.loads(CliRunner().invoke(cli, ["summary", str(traces["tp"]), "--json", "--chips", "0",
                                                 "--no-recommendations"]).output)
    assert "step" not in scoped   # the step is the whole trace, not a chip of it
