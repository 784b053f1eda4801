"""Kineto traces of every device kind PyTorch's profiler writes (CUDA, ROCm/HIP, MTIA) import with their
device kernels, and the temporal breakdown follows Holistic Trace Analysis's definitions, checked
against a plain re-reading of the JSON (bench/hta_parity.py holds the same corpus against HTA itself)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.interop import import_kineto
from explorer.model.analysis.temporal import breakdown
from interop.kineto_devices import KINDS, write_case
from simcore.trace import open_trace

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "mtia_ccp_events"}
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


def hta_by_hand(path: Path) -> dict[str, float]:
    """HTA's temporal breakdown of one rank file: window = first to last device event, compute
    by name, idle = window - union of device events; in % of the window."""
    ev = [e for e in json.loads(path.read_text())["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS and e["args"].get("stream", -1) != -1]
    iv = [(e["ts"], e["ts"] + e["dur"]) for e in ev]
    comp = [(e["ts"], e["ts"] + e["dur"]) for e in ev
            if not NOT_COMPUTE.match(e["name"]) and not re.match(r"^dma", e["name"])]
    comm = [(e["ts"], e["ts"] + e["dur"]) for e in ev if COMM.match(e["name"])]
    window = max(e for _, e in iv) - min(s for s, _ in iv)
    idle = window - union(iv)
    out = {"idle": 100 * idle / window, "compute": 100 * union(comp) / window}
    out["non_compute"] = 100 - out["idle"] - out["compute"]
    if comm:
        out["overlap"] = 100 * (union(comm) + union(comp) - union(comm + comp)) / union(comm)
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("world", [1, 2])
def test_every_device_kind_imports_kernels_and_a_breakdown(tmp_path: Path, kind: str, world: int) -> None:
    files = write_case(tmp_path / "in", kind, world, seed=world, steps=1, gpu_annotations=False, integer_us=True)
    import_kineto(files, tmp_path / "t.trnx")
    t = open_trace(tmp_path / "t.trnx")
    device = sum(1 for f in files for e in json.loads(f.read_text())["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") in {"kernel", "mtia_ccp_events", "cuda_sync"})
    assert t.row_count("kernels") == device > 0
    ranks = {r.rank: r for r in breakdown(t)}
    assert sorted(ranks) == list(range(world))
    for rank, f in enumerate(files):
        want, got = hta_by_hand(f), ranks[rank]
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
