"""Write the operator table, a summary or any analysis table to CSV, atomically.

The GUI's "Export CSV" actions and scripts call these; files go through
`simcore.atomic.atomic_path`, so a failed export never leaves a half-written file.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pandas as pd

from explorer.model.hierarchy import Hierarchy
from explorer.model.metrics import METRIC_BY_NAME
from explorer.model.summary import Summary
from simcore.atomic import atomic_path


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Any DataFrame (an operator table, a selection's events, diff rows) to CSV."""
    path = Path(path)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return path


def write_operator_table(hierarchy: Hierarchy, path: str | os.PathLike[str],
                         levels: tuple[str, ...] = ("model", "layer", "op", "kernel")) -> Path:
    """The operator table (`Hierarchy.rows(levels)`) to CSV, parents before children."""
    return write_csv(hierarchy.rows(levels), path)


def write_summary(summary: Summary, path: str | os.PathLike[str]) -> Path:
    """One row per metric: name, value (empty when unavailable), unit, group, why unavailable."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "value", "unit", "group", "unavailable"])
        for name, value in summary.metrics.items():
            spec = METRIC_BY_NAME[name]
            w.writerow([name, "" if value is None else value, spec.unit, spec.group, summary.unavailable.get(name, "")])
    return path
