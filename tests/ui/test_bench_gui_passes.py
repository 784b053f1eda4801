"""bench/gui_passes.py runs on any trace, not only the 28M capture its kernel ids were picked on:
its links come from the trace it is given, and each action gets its GUI-thread CPU per pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa

from ui.analysis_helpers import SAMPLES

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _ids(trace: Path, table: str, column: str) -> set[int]:
    with pa.memory_map(str(trace / f"{table}.arrow")) as f:
        return set(pa.ipc.open_file(f).read_all().column(column).to_pylist())


def test_the_bench_follows_links_of_the_sample_it_is_given(qtbot, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # (the bench points it at a private directory)
    sys.path.insert(0, str(BENCH))
    try:
        import gui_passes

        trace = SAMPLES / "llama3.1-8b-decode.trnx"
        result = gui_passes.main([str(trace), "--window", "0.2", "--settle", "0.2", "--deep", "--stalls", "20",
                                     "--freeze-dump", "30"])
    finally:
        sys.path.remove(str(BENCH))
    actions = result["actions"]
    names = [a["action"] for a in actions]
    assert names[:2] == ["idle (nothing done)", "select the first instruction"] and len(names) == 2 + 5 + 3, names
    kernels, instructions = _ids(trace, "kernels", "kernel_id"), _ids(trace, "instructions", "id")
    for name in names[2:]:
        kind, value = name.removeprefix("deep link ").split(":")
        assert int(value) in {"kernel": kernels, "instruction": instructions}[kind], name
    assert len({n for n in names if "kernel:" in n}) == 3  # three different kernels
    for a in actions:
        assert 0 <= a["worst_later_pass_ms"] <= a["worst_pass_ms"] <= a["all_passes_ms"] and a["worst_pass_ms"] > 0, a
        assert a["its_cpu_ms"] <= a["worst_pass_ms"] and a["longest_pass_wall_ms"] > 0, a
        assert 0 <= a["its_major_faults"] <= a["major_faults"], a
        # the longest pass's wall split by the scheduler: on a core, waiting for one, asleep (GIL, disk)
        assert a["its_core_wait_ms"] >= 0 and 0 <= a["its_asleep_ms"] <= a["longest_pass_wall_ms"], a
        assert all(ms > 0 for ms in a["its_others_cpu_ms"].values()), a
    assert all({"gui", "others"} <= set(a["stalls"]) for a in actions)
    assert '"actions"' in capsys.readouterr().out  # the JSON summary line
