"""Where a step's time goes (`trnx summary`'s step breakdown): the parts partition the step on the critical
chip, so they sum to the step time; each kind of time lands where a user would look for it."""

from __future__ import annotations

import json

import pytest

import simcore
from explorer import open_trace
from explorer.cli.main import main
from explorer.model.analysis.step_breakdown import CATEGORIES
from explorer.model.analysis.trace_analysis import TraceAnalysis


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("breakdown")
    opts = {
        "decode": dict(workload="llama3.1-8b", phase="decode", batch=1, context=2048, layers=2),
        "gemm": dict(workload="gemm", shape="4096,4096,4096"),
        "tp4": dict(workload="llama3.1-8b", phase="decode", batch=4, layers=2, hardware="trn3-ultraserver-gen1", tp=16,
                    straggler="chip=2,delay=50us"),   # 16 ranks at LNC=2: 4 chips
    }
    for name, o in opts.items():
        simcore.capture(out_path=d / f"{name}.trnx", **o)
    return {name: open_trace(d / f"{name}.trnx") for name in opts}


def parts(trace) -> dict[str, float]:
    b = TraceAnalysis(trace).step_breakdown
    return {p["category"]: p["ns"] for p in b.to_dict()["parts"]}


@pytest.mark.parametrize("name", ["decode", "gemm", "tp4"])
def test_the_parts_sum_to_the_step_time(traces, name):
    t = traces[name]
    p = parts(t)
    assert list(p) == list(CATEGORIES) and min(p.values()) >= 0
    assert sum(p.values()) == pytest.approx(t.duration_ns, abs=1)


def test_a_gemm_step_is_compute_and_a_decode_step_hbm_with_runtime_costs(traces):
    g, d = parts(traces["gemm"]), parts(traces["decode"])
    assert g["compute"] > 0.9 * sum(g.values())
    assert d["hbm"] > 0.5 * sum(d.values()) and d["runtime"] > 0 and d["collective"] == 0


def test_collectives_and_waits_land_on_the_critical_chip(traces):
    """Chip 2 starts 50 us late: everyone else waits for it, so the critical path runs through it and its
    breakdown holds the collectives' transfers but (almost) none of the waiting."""
    t = traces["tp4"]
    b = TraceAnalysis(t).step_breakdown
    assert b.chip == 2
    p = parts(t)
    assert p["collective"] > 0
    assert p["idle"] >= 45_000 or p["runtime"] >= 45_000 or p["collective_wait"] < 5_000
    cc = t.to_pandas("collectives")
    assert cc[cc.chip != 2].wait_ns.sum() > cc[cc.chip == 2].wait_ns.sum()


def test_trnx_summary_prints_and_emits_the_breakdown(traces, capsys):
    path = str(traces["decode"].path)
    capsys.readouterr()
    main(["summary", path, "--json", "--no-recommendations"])
    out = json.loads(capsys.readouterr().out)
    b = out["step_breakdown"]
    assert b["chip"] == 0 and sum(p["ns"] for p in b["parts"]) == pytest.approx(b["step_time_ns"], abs=1)
    assert sum(p["percent"] for p in b["parts"]) == pytest.approx(100.0, abs=0.01)
    main(["summary", path, "--no-recommendations"])
    text = capsys.readouterr().out
    assert "where the step's time goes" in text and "HBM bandwidth" in text


def test_a_scoped_summary_has_no_breakdown(traces, capsys):
    path = str(traces["decode"].path)
    capsys.readouterr()
    main(["summary", path, "--json", "--no-recommendations", "--range", "0:100us"])
    assert json.loads(capsys.readouterr().out).get("step_breakdown") is None
