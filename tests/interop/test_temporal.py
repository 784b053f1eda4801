"""HTA-style temporal breakdown, overlap and stragglers against a hand computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from interop.kineto_samples import write_ranks
from simcore.trace import open_trace, write_trace
from explorer.interop import import_kineto
from explorer.model.analysis.temporal import breakdown, breakdown_frame, stragglers


@pytest.fixture()
def trace(tmp_path: Path):
    out = tmp_path / "run.trnx"
    import_kineto(write_ranks(tmp_path), out)
    return open_trace(out)


def test_breakdown_matches_the_hand_computation(trace) -> None:
    r0, r1 = breakdown(trace)
    # rank 0: window 100..340 us; busy 100-180, 200-300, 320-340
    assert (r0.rank, r0.window_ns, r0.idle_ns, r0.compute_ns, r0.non_compute_ns) == (0, 240_000, 40_000, 150_000, 50_000)
    # rank 1: window 100..300 us; busy 100-180, 250-300
    assert (r1.rank, r1.window_ns, r1.idle_ns, r1.compute_ns, r1.non_compute_ns) == (1, 200_000, 70_000, 120_000, 10_000)
    assert r0.idle_pct == pytest.approx(100 * 40 / 240)
    assert r0.compute_pct + r0.idle_pct + r0.non_compute_pct == pytest.approx(100.0)


def test_overlap_matches_the_hand_computation(trace) -> None:
    r0, r1 = breakdown(trace)
    # rank 0: all-reduce 120-180 under gemm 100-150 for 30 of its 60 us
    assert (r0.comm_ns, r0.overlap_ns, r0.overlap_pct) == (60_000, 30_000, 50.0)
    # rank 1: all-reduce 170-180 starts exactly when the gemm ends
    assert (r1.comm_ns, r1.overlap_ns, r1.overlap_pct) == (10_000, 0, 0.0)


def test_rank1_is_the_straggler(trace) -> None:
    s = stragglers(trace).set_index("rank")
    assert s.loc[1, "is_straggler"] and not s.loc[0, "is_straggler"]
    assert s.loc[1, "caused_wait_ns"] == 50_000 and s.loc[0, "own_wait_ns"] == 50_000
    assert s.loc[1, "mean_lateness_ns"] == 50_000


def test_frame_has_one_row_per_rank(trace) -> None:
    df = breakdown_frame(trace)
    assert list(df["rank"]) == [0, 1]
    assert list(df["overlap_pct"]) == [50.0, 0.0]


def test_simulated_style_trace_uses_instructions_when_no_kernels(tmp_path: Path) -> None:
    """Two chips with instructions only; chip 1 has a gap."""
    tracks = {"track_id": np.array([0, 1], dtype=np.int32), "chip": np.array([0, 1], dtype=np.int32),
              "core": np.zeros(2, dtype=np.int32), "kind": ["vector", "vector"], "name": ["Vector", "Vector"],
              "unit": ["", ""]}
    instr = {"id": np.arange(4), "track_id": np.array([0, 0, 1, 1], dtype=np.int32),
             "start_ns": np.array([0, 10, 0, 30]), "dur_ns": np.array([10, 10, 10, 10]),
             "opcode": "TensorTensor", "kernel_id": -1, "flops": 0, "bytes": 0, "dtype": "bf16"}
    write_trace(tmp_path / "s.trnx", {"tracks": tracks, "instructions": instr})
    r0, r1 = breakdown(open_trace(tmp_path / "s.trnx"))
    assert (r0.window_ns, r0.idle_ns, r0.compute_ns) == (20, 0, 20)
    assert (r1.window_ns, r1.idle_ns, r1.compute_ns) == (40, 20, 20)
    assert stragglers(open_trace(tmp_path / "s.trnx")).empty
