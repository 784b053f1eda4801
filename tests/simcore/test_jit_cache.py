"""numba's on-disk cache follows an edit to simcore/timing/fluid.py, whose `advance` the scheduler
compiles in: after the edit the scheduler runs the new code, with no cache to clear by hand."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# one DMA transfer alone on a core's engines: it takes its idle time, 100 ns
PROBE = """
import numpy as np
import simcore
from simcore.timing.listsched import Sharing, Throttle, _schedule, schedule
assert simcore.__file__.startswith({root!r}), simcore.__file__
used, cap = Sharing.ledger(1, 200, 8.0, 1.0)
sharing = Sharing(dma_grp=np.zeros(1, np.int32), hbm_bytes=np.zeros(1), read_frac=np.zeros(1),
                  weight=np.ones(1), used=used, cap=cap, slice_ns=8.0)
_, end, _, _ = schedule(np.zeros(1, np.int32), np.array([100.0]), np.zeros(1), np.zeros(2, np.int64),
                        np.zeros(0, np.int64), np.full(1, -1, np.int32), 1, 0.0, Throttle(), 1, sharing)
print(len(_schedule.stats.cache_hits), end[0])
"""


def _run(tmp: Path) -> tuple[bool, float]:
    """(whether the scheduler came from the disk cache, the transfer's end) in a new interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the copy's own __pycache__
    env["PYTHONPATH"] = str(tmp)
    out = subprocess.run([sys.executable, "-c", PROBE.format(root=str(tmp))], cwd=tmp, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    hits, end = out.stdout.split()[-2:]
    return int(hits) > 0, float(end)


@pytest.mark.slow  # two interpreters each compile the scheduler (~4 s of CPU each), one loads it
def test_an_edit_to_fluid_py_reaches_the_cached_scheduler(tmp_path):
    shutil.copytree(ROOT / "simcore", tmp_path / "simcore", ignore=shutil.ignore_patterns("__pycache__"))
    assert _run(tmp_path) == (False, pytest.approx(100.0))   # compiled and cached
    assert list((tmp_path / "simcore" / "timing" / "__pycache__").glob("listsched._schedule-*.nbi"))
    assert _run(tmp_path) == (True, pytest.approx(100.0))    # nothing edited: loaded from the cache
    fluid = tmp_path / "simcore" / "timing" / "fluid.py"
    src = fluid.read_text()
    old = "    if W <= 0.0:\n        return t, 0.0\n"
    assert old in src
    fluid.write_text(src.replace(old, "    W = 2.0 * W\n" + old, 1))  # every transfer's work doubled
    # compiled afresh, not the stale 100 ns numba's own stamp (listsched.py is unchanged) would load
    assert _run(tmp_path) == (False, pytest.approx(200.0))
