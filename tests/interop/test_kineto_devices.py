"""Kineto traces of every device kind PyTorch's profiler writes (CUDA, ROCm/HIP, MTIA) import with their
device kernels, and the temporal breakdown follows Holistic Trace Analysis's definitions, checked
against a plain re-reading of the JSON (bench/hta_parity.py holds the same corpus against HTA itself)."""

from __future__ import annotations

import gzip
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.interop import import_kineto
from explorer.model.analysis.temporal import breakdown
from interop.kineto_devices import KINDS, write_case
from simcore.trace import open_trace

COMM = re.compile(r"^nccl.*Kernel")
NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def union(iv: list[tuple[float, float]]) -> float:
    total, cur = 0.0, None
    for s, e in sorted(iv):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0.0)


def _stream(e: dict) -> int:
    try:
        return int(e.get("args", {}).get("stream", -1))
    except ValueError:
        return -1


def hta_by_hand(paths: list[Path]) -> dict[int, dict[str, float]]:
    """HTA's temporal breakdown of each rank file, read plainly from the JSON: events with a
    duration; times on the whole-microsecond grid; with two or more ProfilerStep names in the
    trace, GPU kernels (stream >= 0 and correlation >= 0, or an Event/Context Sync) kept only when
    a non-GPU event of the same correlation starts before the last ProfilerStep start, other
    events when they start before it; device events = stream other than -1; window = first to
    last device event, compute by name, idle = window - union; in % of the window."""
    ranks = [[e for e in json.loads(p.read_text())["traceEvents"] if e.get("ph") == "X" and "dur" in e] for p in paths]
    steps = {e["name"] for evs in ranks for e in evs if "ProfilerStep" in e["name"]}
    out = {}
    for rank, evs in enumerate(ranks):
        for e in evs:
            e["s"], e["e"] = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
            corr = e.get("args", {}).get("correlation", -1)
            e["gpu"] = (_stream(e) >= 0 and corr >= 0) or e["name"] in ("Event Sync", "Context Sync")
        if len(steps) >= 2:
            last = max(e["s"] for e in evs if not e["gpu"] and "ProfilerStep" in e["name"])
            host = [e for e in evs if not e["gpu"] and e["s"] < last]
            launched = {e.get("args", {}).get("correlation", -1) for e in host}
            evs = host + [e for e in evs if e["gpu"] and e.get("args", {}).get("correlation", -1) in launched]
        dev = [e for e in evs if _stream(e) != -1]
        iv = [(e["s"], e["e"]) for e in dev]
        comp = [(e["s"], e["e"]) for e in dev if not NOT_COMPUTE.match(e["name"]) and not re.match(r"^dma", e["name"])]
        comm = [(e["s"], e["e"]) for e in dev if COMM.match(e["name"])]
        window = max(e for _, e in iv) - min(s for s, _ in iv)
        idle = window - union(iv)
        fig = {"idle": 100 * idle / window, "compute": 100 * union(comp) / window}
        fig["non_compute"] = 100 - fig["idle"] - fig["compute"]
        if comm:
            fig["overlap"] = 100 * (union(comm) + union(comp) - union(comm + comp)) / union(comm)
        out[rank] = fig
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("world", [1, 2])
@pytest.mark.parametrize("shape", ["one step, whole us", "four steps, ns, device annotations"])
def test_every_device_kind_imports_kernels_and_a_breakdown(tmp_path: Path, kind: str, world: int, shape: str) -> None:
    many = shape.startswith("four")
    files = write_case(tmp_path / "in", kind, world, seed=world, steps=4 if many else 1, gpu_annotations=many,
                       integer_us=not many)
    import_kineto(files, tmp_path / "t.trnx")
    t = open_trace(tmp_path / "t.trnx")
    device = sum(1 for f in files for e in json.loads(f.read_text())["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") in {"kernel", "mtia_ccp_events", "cuda_sync"})
    assert t.row_count("kernels") == device > 0
    ranks = {r.rank: r for r in breakdown(t)}
    assert sorted(ranks) == list(range(world))
    by_hand = hta_by_hand(files)
    for rank in range(world):
        want, got = by_hand[rank], ranks[rank]
        assert got.idle_pct == pytest.approx(want["idle"], abs=1e-6)
        assert got.compute_pct == pytest.approx(want["compute"], abs=1e-6)
        assert got.non_compute_pct == pytest.approx(want["non_compute"], abs=1e-6)
        if "overlap" in want:
            assert got.overlap_pct == pytest.approx(want["overlap"], abs=1e-6)


def test_a_single_rank_measured_trace_prints_its_breakdown(tmp_path: Path) -> None:
    files = write_case(tmp_path / "in", "rocm", 1, steps=1, gpu_annotations=False)
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "import", str(files[0]), "-o", str(tmp_path / "t.trnx")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "temporal breakdown per rank" in r.stdout


def test_a_cpu_only_recording_imports_its_ops_and_no_breakdown(tmp_path: Path) -> None:
    """A trace torch.profiler 2.13 recorded on the CPU (ProfilerActivity.CPU, three steps of a
    small MLP's training): CPU ops and ProfilerSteps, no device activity, so - as in HTA - no
    temporal breakdown, and the summary still runs."""
    src = Path(__file__).parent / "data" / "cpu_only_torch2.13.pt.trace.json.gz"
    events = json.loads(gzip.decompress(src.read_bytes()))["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    import_kineto([src], tmp_path / "t.trnx")
    t = open_trace(tmp_path / "t.trnx")
    assert t.row_count("kernels") == 0 and t.row_count("dma") == 0
    assert t.row_count("ops") == len(ops) + 1  # and the model root
    steps = t.to_pandas("ops").query("level == 'layer'")["name"].tolist()
    assert steps == ["rank 0 ProfilerStep#1", "rank 0 ProfilerStep#2"]
    assert breakdown(t) == []
    r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "summary", str(tmp_path / "t.trnx")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "temporal breakdown" not in r.stdout


def test_device_events_without_args_still_give_a_breakdown(tmp_path: Path) -> None:
    """Older ROCm builds of Kineto wrote device events with no args (device and stream only as
    pid/tid). HTA finds no device event in such a rank and fails; the import counts them all."""
    files = write_case(tmp_path / "in", "rocm", 1, steps=1, gpu_annotations=False, integer_us=True)
    doc = json.loads(files[0].read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"):
            e["args"] = {"External id": e["args"].get("External id", 0)}
    files[0].write_text(json.dumps(doc))
    import_kineto(files, tmp_path / "t.trnx")
    (r,) = breakdown(open_trace(tmp_path / "t.trnx"))
    dev = [(e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")]
    window = max(e for _, e in dev) - min(s for s, _ in dev)
    assert r.window_ns == window * 1000 and r.idle_ns == round((window - union(dev)) * 1000)
