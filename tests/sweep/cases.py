"""A small sweep every sweep test shares: Llama 3.1 70B decode, one layer, on the Gen1
UltraServer, tp 4, 8, 3 (ranks: logical cores, 4 per chip at LNC=2) x batch 1, 16 -- three
captures (about a second in all) and three refusals: tp=4 batch=16 does not fit a logical
core's HBM, tp=3 does not divide 64 heads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

FIXED = ["-H", "trn3-ultraserver-gen1", "-w", "llama3.1-70b", "--layers", "1"]
GRID = ["--grid", "tp=4,8,3", "--grid", "batch=1,16"]


def trnx(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *map(str, args)], capture_output=True,
                          text=True, **kw)


def results(directory: Path) -> pd.DataFrame:
    return pd.read_parquet(Path(directory) / "results.parquet")


