"""One selection grammar in every command that selects: --range with units, --chips/--cores/--tracks lists.

Run in-process through `trnx`'s real entry point (`explorer.cli.main.main`), so bad input
is checked as a user sees it: one line on stderr, exit 2, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model import analysis_traces as at
import clirun
from explorer.model.analysis.summary import summarize
from simcore.trace import open_trace


def trnx_json(capsys, *args) -> dict:
    code, out, err = clirun.trnx(*args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def basic(tmp_path_factory) -> Path:
    return at.write(tmp_path_factory.mktemp("scope") / "basic.trnx")


def test_summary_range_takes_units_and_chips_a_list(basic, capsys):
    ns = trnx_json(capsys, "summary", basic, "--range", "1000:3050", "--no-recommendations")
    us = trnx_json(capsys, "summary", basic, "--range", "1us:3.05us", "--no-recommendations")
    assert us == ns and us["metrics"]["total_time_ns"] == 2050
    assert trnx_json(capsys, "summary", basic, "--range", "0.001ms:", "--no-recommendations")["scope"]["t1_ns"] == 10_000
    one = trnx_json(capsys, "summary", basic, "--chips", "1", "--no-recommendations")
    assert one["scope"]["chips"] == [1] and one["metrics"]["hardware_flops"] == 4_000_000
    assert trnx_json(capsys, "summary", basic, "--chip", "1", "--no-recommendations") == one  # the old spelling
    both = trnx_json(capsys, "summary", basic, "--chips", "0,1", "--no-recommendations")
    assert both["metrics"] == trnx_json(capsys, "summary", basic, "--no-recommendations")["metrics"]


def test_summary_cores_and_tracks(basic, capsys):
    core1 = trnx_json(capsys, "summary", basic, "--chips", "0", "--cores", "1", "--no-recommendations")
    assert core1["scope"]["core_ids"] == [1]
    assert core1["metrics"]["tensor_engine_active_time_ns"] == 0  # core 1 has kernels only
    assert 0 < core1["metrics"]["hardware_flops"] < trnx_json(
        capsys, "summary", basic, "--chips", "0", "--no-recommendations")["metrics"]["hardware_flops"]
    vec = trnx_json(capsys, "summary", basic, "--tracks", str(at.T_VECTOR), "--no-recommendations")
    assert vec["metrics"] == json.loads(json.dumps(summarize(open_trace(basic), track_ids=[at.T_VECTOR]).metrics))


def test_export_range_units_and_chips(basic, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert clirun.trnx("export", basic, "--format", "chrome-json", "-o", a, "--range", "1000:3050", "--cores", "0")[0] == 0
    assert clirun.trnx("export", basic, "--format", "chrome-json", "-o", b, "--range", "1us:3.05us", "--cores", "0")[0] == 0
    assert a.read_bytes() == b.read_bytes()
    events = json.loads(a.read_text())["traceEvents"]
    assert all(e["ts"] < 3.05 and e["ts"] + e.get("dur", 0) > 1 for e in events if e["ph"] == "X")
    csv = tmp_path / "k.csv"
    assert clirun.trnx("export", basic, "--format", "csv", "--table", "kernels", "--chips", "1", "-o", csv)[0] == 0
    rows = csv.read_text().splitlines()
    chip = rows[0].split(",").index('"chip"')
    assert len(rows) > 1 and {r.split(",")[chip] for r in rows[1:]} == {"1"}
    code, _, err = clirun.trnx("export", basic, "--format", "csv", "--table", "flows", "--range", "0:1us", "-o", tmp_path / "f.csv")
    assert code == 2 and "the flows table has no times, so --range does not apply to it." in err


def test_diff_takes_the_same_scope_on_both_traces(basic, capsys):
    d = trnx_json(capsys, "diff", basic, basic, "--range", "1us:3.05us", "--chips", "0")
    metrics = {m["metric"]: m for m in d["metrics"]}
    want = summarize(open_trace(basic), chips=[0], time_range=(1000, 3050)).metrics
    assert metrics["total_time_ns"]["a"] == metrics["total_time_ns"]["b"] == 2050
    assert metrics["hardware_flops"]["a"] == pytest.approx(want["hardware_flops"])
    whole = trnx_json(capsys, "diff", basic, basic)
    assert {m["metric"]: m for m in whole["metrics"]}["total_time_ns"]["a"] == 10_000
    assert len(d["kernels"]) <= len(whole["kernels"])


@pytest.mark.parametrize("command", ["summary", "export", "diff"])
@pytest.mark.parametrize("args, fragment", [
    (["--range", "1ms"], "--range '1ms' is not START:END"),
    (["--range", "2us:1us"], "ends before it starts"),
    (["--range", "1h:2h"], "--range '1h:2h' is not START:END"),
    (["--chips", "0,x"], "--chips '0,x' is not a comma-separated list of chip numbers"),
    (["--chips", "7"], "chip 7 is not in this trace (chips: 0..1)"),
    (["--cores", "5"], "core 5 is not in this trace"),
    (["--tracks", "99"], "track 99 is not in this trace"),
])
def test_bad_selection_is_one_sentence_and_exit_2(basic, tmp_path, capsys, command, args, fragment):
    out = tmp_path / "out.json"
    argv = {"summary": ["summary", basic], "diff": ["diff", basic, basic],
            "export": ["export", basic, "--format", "chrome-json", "-o", out]}[command]
    code, _, err = clirun.trnx(*argv, *args)
    assert code == 2, err
    assert err.startswith("trnx: error: ") and fragment in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("window, says", [
    ("999s:", "time range starts at 999000000000 ns, after the trace ends (it spans 0..10000 ns)"),
    (":-5us", "time range ends at -5000 ns, before the trace starts (it spans 0..10000 ns)"),
])
def test_an_open_window_beyond_the_trace_says_which_end(basic, capsys, window, says):
    """A window left open on one side and wholly beyond the trace is refused for what it is (a start
    after the trace's end, e.g. a mistyped unit), not as an end before a start the user never gave."""
    code, _, err = clirun.trnx("summary", basic, "--range", window)
    assert code == 2 and says in clirun.one_sentence(err)


@pytest.mark.parametrize("command", ["summary", "ops", "export"])
def test_a_window_wholly_outside_the_trace_is_refused_not_summarised_as_zeros(basic, tmp_path, capsys, command):
    """--range 999s:1000s on a 10 us trace (a mistyped unit) printed a summary of zeros that said '1 core on
    1 chip did work'; it is one sentence now. A window reaching past either end still works (below)."""
    out = tmp_path / "o.json"
    argv = {"summary": ["summary", basic], "ops": ["ops", basic],
            "export": ["export", basic, "--format", "chrome-json", "-o", out]}[command]
    for window in ("999s:1000s", "-5us:-1us"):
        code, _, err = clirun.trnx(*argv, "--range", window)
        assert code == 2 and "is outside the trace, which spans 0..10000 ns" in clirun.one_sentence(err), err
    assert not out.exists()
    assert clirun.trnx(*argv, "--range", "5us:1s")[0] == 0


def test_diff_keeps_a_window_one_trace_does_not_reach(basic, capsys):
    """Two traces of different lengths share one window: diff compares it even where one is silent."""
    assert clirun.trnx("diff", basic, basic, "--range", "999s:1000s")[0] == 0
