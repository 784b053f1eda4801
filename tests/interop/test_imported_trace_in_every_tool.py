"""An imported PyTorch-profiler trace works in every trnx tool, the desktop view included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from interop.kineto_samples import write_ranks
from explorer.interop import import_kineto


def trnx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("imported")
    out = d / "run.trnx"
    import_kineto(write_ranks(d), out)
    return out


def test_summary_info_validate(imported: Path) -> None:
    r = trnx("summary", str(imported), "--json")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    r = trnx("info", str(imported), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["tracks_per_chip"] == {"0": 5, "1": 3}
    assert trnx("validate", str(imported)).returncode == 0


def test_desktop_view_renders_it(imported: Path) -> None:
    r = trnx("view", str(imported), "--smoke-test")
    assert r.returncode == 0, r.stderr


def test_desktop_view_refuses_a_damaged_trace_in_one_line(imported: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad.trnx"
    shutil.copytree(imported, bad)
    f = bad / "kernels.arrow"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    r = trnx("view", str(bad), "--smoke-test")
    assert r.returncode == 2 and r.stderr.startswith("trnx: error: ") and "Traceback" not in r.stderr
