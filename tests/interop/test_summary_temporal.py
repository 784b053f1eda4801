"""`trnx summary` shows each rank's temporal breakdown, overlap and the stragglers (HTA's definitions).

Through the real command line, on the hand-written two-rank Kineto trace whose answers
docs/interop.md works out (times in us; trace time starts at 90 us, the ProfilerStep):
rank 0: window 240, idle 40, compute 150, non-compute 50, communication 60, overlap 30 (50 %);
rank 1: window 200, idle 70, compute 120, non-compute 10, communication 10, overlap 0;
rank 1 arrives 50 us after rank 0 at the all-reduce: the straggler.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from interop.kineto_samples import write_ranks
from explorer.interop import import_kineto

ROOT = Path(__file__).parents[2]


def trnx(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kineto")
    out = folder / "run.trnx"
    import_kineto(write_ranks(folder), out)
    return out


def _summary_json(*args: object) -> dict:
    proc = trnx("summary", *args, "--json", "--no-recommendations")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _row(r: dict) -> tuple:
    return (r["rank"], r["window_ns"], r["idle_ns"], r["compute_ns"], r["non_compute_ns"], r["comm_ns"], r["overlap_ns"])


def test_json_has_the_hand_computed_breakdown_overlap_and_straggler(two_ranks: Path) -> None:
    t = _summary_json(two_ranks)["temporal"]
    r0, r1 = t["ranks"]
    assert _row(r0) == (0, 240_000, 40_000, 150_000, 50_000, 60_000, 30_000)
    assert _row(r1) == (1, 200_000, 70_000, 120_000, 10_000, 10_000, 0)
    assert (r0["idle_pct"], r0["compute_pct"], r0["non_compute_pct"], r0["overlap_pct"]) == pytest.approx(
        (100 * 40 / 240, 62.5, 100 * 50 / 240, 50.0))
    assert (r1["idle_pct"], r1["compute_pct"], r1["non_compute_pct"], r1["overlap_pct"]) == (35.0, 60.0, 5.0, 0.0)
    assert t["straggler_ranks"] == [1]
    s0, s1 = t["stragglers"]
    assert (s1["rank"], s1["last_arrivals"], s1["caused_wait_ns"], s1["mean_lateness_ns"], s1["is_straggler"]) == (1, 1, 50_000, 50_000.0, True)
    assert (s0["rank"], s0["own_wait_ns"], s0["is_straggler"]) == (0, 50_000, False)


def test_text_shows_the_table_and_names_the_straggler(two_ranks: Path) -> None:
    proc = trnx("summary", two_ranks, "--no-recommendations")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("temporal breakdown per rank"))
    assert re.split(r"\s{2,}", lines[head + 2].strip()) == ["0", "240 us", "16.7", "62.5", "20.8", "60 us", "50.0"]
    assert re.split(r"\s{2,}", lines[head + 3].strip()) == ["1", "200 us", "35.0", "60.0", "5.0", "10 us", "0.0"]
    assert lines[head + 4].strip().startswith("straggler: rank 1 arrived last at 1 of its 1 collectives")
    assert "the others waited 50 us for it" in lines[head + 4]


def test_chip_and_range_scopes(two_ranks: Path) -> None:
    only1 = _summary_json(two_ranks, "--chip", "1")["temporal"]
    assert [_row(r) for r in only1["ranks"]] == [(1, 200_000, 70_000, 120_000, 10_000, 10_000, 0)]
    assert only1["straggler_ranks"] == [1]  # judged against rank 0's arrival, which is outside the scope
    # 20..200 us of trace time = 110..290 us of the file's: every interval cut to it (docs/interop.md)
    cut = _summary_json(two_ranks, "--range", "20000:200000")["temporal"]
    r0, r1 = cut["ranks"]
    assert _row(r0) == (0, 180_000, 20_000, 130_000, 30_000, 60_000, 30_000)
    assert _row(r1) == (1, 180_000, 70_000, 100_000, 10_000, 10_000, 0)
    late = _summary_json(two_ranks, "--range", "200000:250000")["temporal"]  # after the all-reduce
    assert late["stragglers"] == [] and late["straggler_ranks"] == []
    assert [r["overlap_pct"] for r in late["ranks"]] == [None, None]  # no communication: no ratio
    text = trnx("summary", two_ranks, "--range", "200000:250000", "--no-recommendations").stdout
    assert "stragglers: none to find" in text and "n/a" in text.split("temporal breakdown per rank")[1]


def test_a_single_chip_trace_has_no_temporal_section() -> None:
    sample = ROOT / "sample_traces" / "gemm-4096-bf16.trnx"
    assert _summary_json(sample)["temporal"] is None
    assert "temporal breakdown" not in trnx("summary", sample, "--no-recommendations").stdout


def test_a_simulated_multi_chip_capture_names_its_slowed_chip(tmp_path: Path) -> None:
    """The definitions are engine-agnostic: a 4-chip tensor-parallel capture with chip 2
    slowed by 30 % has communication on every chip, and chip 2 is the straggler."""
    out = tmp_path / "tp4.trnx"
    cap = trnx("capture", "-H", "trn3-ultraserver-gen1", "-w", "llama3.1-8b", "--tp", "16", "--layers", "1",
               "--straggler", "chip=2,slowdown=1.3", "-o", out)
    assert cap.returncode == 0, cap.stderr
    t = _summary_json(out)["temporal"]
    assert [r["rank"] for r in t["ranks"]] == [0, 1, 2, 3]
    for r in t["ranks"]:
        assert r["idle_ns"] + r["compute_ns"] + r["non_compute_ns"] == r["window_ns"] and r["comm_ns"] > 0
    assert t["straggler_ranks"] == [2]
    slow = {r["rank"]: r for r in t["ranks"]}
    assert slow[2]["compute_pct"] > max(slow[c]["compute_pct"] for c in (0, 1, 3))  # the others wait instead


def test_metrics_doc_defines_every_temporal_field(two_ranks: Path) -> None:
    doc = (ROOT / "docs" / "metrics.md").read_text()
    t = _summary_json(two_ranks)["temporal"]
    for name in [*t["ranks"][0], *t["stragglers"][0], "straggler_ranks"]:
        assert f"`{name}`" in doc, name
