"""Exporters: a trace (or one of its tables) to other file formats.

`FORMATS` maps a format name to a function `(trace, out_path, options) -> rows`.
Every exporter streams its output and writes atomically (`simcore.atomic`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from simcore.trace import Trace

from explorer.export.chrome_json import export_chrome_json
from explorer.export.neuron_explorer import export_neuron_explorer
from explorer.export.perfetto import export_perfetto
from explorer.export.tables import export_csv, export_parquet

Exporter = Callable[[Trace, Path, dict[str, Any]], int]

FORMATS: dict[str, Exporter] = {
    "parquet": export_parquet,
    "csv": export_csv,
    "chrome-json": export_chrome_json,
    "perfetto": export_perfetto,
    "neuron-explorer": export_neuron_explorer,
}
