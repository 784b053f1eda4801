"""`trnx import` through the real entry point: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from interop.kineto_samples import write_ranks
from simcore.trace import open_trace


def trnx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True, timeout=120)


def test_import_prints_breakdown_and_writes_a_valid_trace(tmp_path: Path) -> None:
    paths = [str(p) for p in write_ranks(tmp_path, gz=True)]
    out = tmp_path / "run.trnx"
    r = trnx("import", *paths, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "2 rank(s)" in r.stdout and "straggler: rank 1 arrived last" in r.stdout  # the summary's temporal section
    open_trace(out)
    r = trnx("import", *paths, "-o", str(out), "--overwrite", "--json")
    facts = json.loads(r.stdout)
    assert facts["ranks"] == [0, 1] and facts["stragglers"] == [1]
    assert [b["overlap_pct"] for b in facts["breakdown"]] == [50.0, 0.0]


def test_import_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    r = trnx("import", str(bad), "-o", str(tmp_path / "x.trnx"))
    assert r.returncode == 2
    assert r.stderr.startswith("trnx: error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.trnx").exists()
