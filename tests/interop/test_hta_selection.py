"""Which device events an imported trace's temporal breakdown analyses: HTA 0.5.0's selection.

A worked example (times in us) on one CUDA rank: ProfilerStep#0 at 0-100 and ProfilerStep#1 at
100-200 on the CPU; GEMMs a (launched at 10, runs 20-60), b (launched at 90, runs 95-150: queued
into the last step, still kept) and c (launched at 110, in the last step: dropped), a copy
(launched at 30, runs 40-70), a kernel no launch names (70-80: dropped) and an Event Sync on
stream -1 (60-90: never a device event for HTA). Kept: 20-60, 40-70, 95-150. Window 20..150 =
130, busy 20-70 + 95-150 = 105, so idle 25 (19.23 %), compute 40 + 55 = 95 (73.08 %),
non-compute 10 (the copy's 60-70, 7.69 %). Kineto's device copy of ProfilerStep#1 starting at
150 moves "the last step" to 150 (HTA takes the latest ProfilerStep start of any non-GPU event),
so GEMM c counts: window 170, idle 25, compute 135, non-compute 10. With one ProfilerStep
nothing is dropped but the Event Sync: window 170, busy 155, compute 145, non-compute 10.
bench/hta_parity.py checks these same rules against HTA itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.interop import import_kineto
from explorer.model.analysis.temporal import breakdown
from simcore.trace import open_trace


def _doc(steps: int, device_step_copy: bool) -> dict:
    cpu, dev = 4000, 0

    def x(cat: str, name: str, ts: float, dur: float, pid: int, tid: int, **args) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

    def launch(name: str, ts: float, corr: int) -> dict:
        return x("cuda_runtime", name, ts, 3.0, cpu, cpu, correlation=corr, cbid=211)

    def kernel(cat: str, name: str, ts: float, dur: float, stream: int, corr: int) -> dict:
        return x(cat, name, ts, dur, dev, stream if stream >= 0 else 1, device=dev, stream=stream, correlation=corr)

    ev = [x("user_annotation", "ProfilerStep#0", 0.0, 100.0, cpu, cpu, **{"External id": 1})]
    if steps == 2:
        ev.append(x("user_annotation", "ProfilerStep#1", 100.0, 100.0, cpu, cpu, **{"External id": 2}))
    ev += [
        launch("cudaLaunchKernel", 10.0, 1), kernel("kernel", "gemm_a", 20.0, 40.0, 7, 1),
        launch("cudaLaunchKernel", 90.0, 2), kernel("kernel", "gemm_b", 95.0, 55.0, 7, 2),
        launch("cudaLaunchKernel", 110.0, 3), kernel("kernel", "gemm_c", 150.0, 40.0, 7, 3),
        launch("cudaMemcpyAsync", 30.0, 4), kernel("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 40.0, 30.0, 13, 4),
        kernel("kernel", "orphan", 70.0, 10.0, 7, 9),
        launch("cudaEventSynchronize", 50.0, 5), kernel("cuda_sync", "Event Sync", 60.0, 30.0, -1, 5),
        x("gpu_user_annotation", "ProfilerStep#0", 20.0, 130.0, dev, 7, **{"External id": 1}),
    ]
    if device_step_copy:
        ev.append(x("gpu_user_annotation", "ProfilerStep#1", 150.0, 40.0, dev, 7, **{"External id": 2}))
    return {"schemaVersion": 1, "traceEvents": ev}


CASES = {  # (steps, device copy of step 1) -> window, idle, compute, non-compute in us
    "two steps: the last one is dropped": ((2, False), (130, 25, 95, 10)),
    "its device copy starts the last step later": ((2, True), (170, 25, 135, 10)),
    "one step: nothing is dropped": ((1, False), (170, 15, 145, 10)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_breakdown_analyses_what_hta_analyses(tmp_path: Path, case: str) -> None:
    (steps, copy), (window, idle, compute, non_compute) = CASES[case]
    src = tmp_path / "rank0.pt.trace.json"
    src.write_text(json.dumps(_doc(steps, copy)))
    import_kineto([src], tmp_path / "t.trnx")
    t = open_trace(tmp_path / "t.trnx")
    assert t.row_count("kernels") == 5 and t.row_count("dma") == 1  # every event is imported; the analysis selects
    (r,) = breakdown(t)
    assert (r.window_ns, r.idle_ns, r.compute_ns, r.non_compute_ns) == (window * 1000, idle * 1000, compute * 1000,
                                                                         non_compute * 1000)
    assert r.idle_pct == pytest.approx(100 * idle / window)


def test_a_hand_edited_selection_is_ignored(tmp_path: Path) -> None:
    """`meta.capture.hta_excluded` holds id ranges; anything else there excludes nothing."""
    from explorer.model.analysis.temporal import in_ranges
    import numpy as np

    ids = np.arange(6)
    assert in_ranges(ids, [[1, 3], [2, 5]]).tolist() == [False, True, True, True, True, False]
    for bad in (None, "x", [[3, 1]], [[1, "2"]], [1, 2], {"a": 1}, [[True, 4]]):
        assert not in_ranges(ids, bad).any()


def test_trnx_import_says_what_the_breakdown_leaves_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.cli.main import main

    src = tmp_path / "rank0.pt.trace.json"
    src.write_text(json.dumps(_doc(2, False)))
    main(["import", str(src), "-o", str(tmp_path / "t.trnx")])
    out = capsys.readouterr().out
    # gemm_c (launched in the last step), the kernel no launch names, the Event Sync (stream -1)
    assert "leaves out 3 kernels and 0 copies" in out
    assert " 19.2 " in out  # rank 0's idle %: 25 of 130 us
    main(["import", str(src), "-o", str(tmp_path / "u.trnx"), "--json"])
    assert json.loads(capsys.readouterr().out)["breakdown_left_out"] == {"kernels": 3, "dma": 0}
