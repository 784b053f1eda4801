"""One composition of a trace's analyses for the CLI and the GUI (explorer.model.analysis.trace_analysis)."""

from __future__ import annotations

import json

import pytest

from model import analysis_traces as at
from explorer.cli.commands.summary import build_report
from explorer.model.scope import Scope
from explorer.model.analysis.trace_analysis import TraceAnalysis
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    return at.write(tmp_path_factory.mktemp("ta") / "basic.trnx")


def test_the_window_shows_what_the_cli_reports(basic):
    window = TraceAnalysis.for_window(TraceIndex.build(open_trace(basic)))
    report = json.loads(json.dumps(build_report(str(basic), Scope(), True, True)))
    assert report["metrics"] == json.loads(json.dumps(window.summary.metrics))
    assert report["per_chip"] == json.loads(json.dumps({str(c): s.metrics for c, s in window.per_chip.items()}))
    assert report["recommendations"] == json.loads(json.dumps([r.to_dict() for r in window.recommendations]))


def test_a_scope_narrows_the_numbers_but_not_the_rules(basic):
    trace = open_trace(basic)
    whole, chip1 = TraceAnalysis(trace), TraceAnalysis(trace, Scope(chips=(1,)))
    assert chip1.summary.metrics["hardware_flops"] == 4_000_000 < whole.summary.metrics["hardware_flops"]
    assert set(chip1.per_chip) == {1}
    assert [r.rule for r in chip1.recommendations] == [r.rule for r in whole.recommendations]
