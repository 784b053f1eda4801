"""A finished (or running) sweep read back: `explorer.open_sweep(path)`.

    sweep = explorer.open_sweep("sweep")
    sweep.results                    # pandas DataFrame, one row per configuration
    sweep.grid_keys                  # ["tp", "batch", "dtype"]
    sweep.pareto("step_time_ns", "tokens_per_s_per_chip")   # the rows on the front
    sweep.trace_path(7) or sweep.capture_trace(7)           # a configuration's trace

The same table in one line: `pandas.read_parquet("sweep/results.parquet")`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from explorer.model.analysis.pareto import pareto_front
from explorer.sweep.results import METRIC_BY_COLUMN, OK, RESULTS_FILE
from explorer.sweep.store import SweepDir
from explorer.sweep.traces import matching_trace
from simcore.errors import UserError


class Sweep:
    """A sweep directory: its options, grid and results."""

    def __init__(self, directory: SweepDir) -> None:
        self.dir = directory
        self.path = directory.path
        self.fixed: dict[str, Any] = dict(directory.spec.fixed)
        self.grid_keys: list[str] = [a.name for a in directory.spec.axes]
        self.results = self._read()

    def _read(self) -> pd.DataFrame:
        from explorer.sweep.results import schema

        f = self.path / RESULTS_FILE
        if not f.exists():
            return schema(self.dir.spec.axes).empty_table().to_pandas()
        return pd.read_parquet(f)

    def reload(self) -> pd.DataFrame:
        """Read results.parquet again (a sweep still running adds rows)."""
        self.results = self._read()
        return self.results

    @property
    def configurations(self) -> int:
        return len(self.dir.spec.configurations)

    def options(self, config: int) -> dict[str, Any]:
        """Every capture option of configuration `config` (what `trnx capture` would be given)."""
        return self.dir.spec.options(self._config(config))

    def _config(self, config: int):
        configs = self.dir.spec.configurations
        if not 0 <= int(config) < len(configs):
            raise UserError(f"the sweep has configurations 0..{len(configs) - 1}, not {config}.")
        return configs[int(config)]

    def trace_path(self, config: int) -> Path | None:
        """The configuration's kept trace, if there is one."""
        p = self.dir.traces_dir / self.dir.spec.trace_name(self._config(config))
        return p if matching_trace(p, self.options(config)) else None

    def capture_target(self, config: int) -> Path:
        """Where a capture of configuration `config` goes: the sweep's traces/ (so it is there
        next time), or a fresh temporary directory where that cannot be written."""
        name = self.dir.spec.trace_name(self._config(config))
        target = self.dir.traces_dir / name
        try:
            self.dir.make_traces_dir()
            if os.access(self.dir.traces_dir, os.W_OK) and not os.path.lexists(target):
                return target
        except OSError:
            pass
        return Path(tempfile.mkdtemp(prefix="trnx-sweep-trace-")) / name

    def capture_trace(self, config: int, progress: Any = None, cancel: Any = None) -> Path:
        """The configuration's trace: the kept one, or captured now (`capture_target`)."""
        import simcore.capture as sc

        kept = self.trace_path(config)
        if kept is not None:
            return kept
        return sc.capture(self.options(config), self.capture_target(config), progress=progress, cancel=cancel)

    def pareto(self, x: str, y: str, higher_x: bool | None = None, higher_y: bool | None = None) -> pd.DataFrame:
        """The ok rows on the Pareto front of columns x and y, ordered by x. Directions default
        to the metric's (step time: lower is better; tokens/s: higher), else higher."""
        ok = self.results[self.results["status"] == OK]
        idx = pareto_front(ok[x].to_numpy(dtype=float, na_value=float("nan")),
                           ok[y].to_numpy(dtype=float, na_value=float("nan")),
                           better_high(x) if higher_x is None else higher_x,
                           better_high(y) if higher_y is None else higher_y)
        return ok.iloc[idx]


def better_high(column: str) -> bool:
    """Is a higher value of `column` better (for the Pareto front)? Metrics say; others: yes."""
    spec = METRIC_BY_COLUMN.get(column)
    return True if spec is None or spec.higher_is_better is None else bool(spec.higher_is_better)


def open_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Open the sweep directory `path` (or its results.parquet) that `trnx sweep -o` wrote."""
    return Sweep(SweepDir.open(path))
