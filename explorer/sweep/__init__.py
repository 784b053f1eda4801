"""Design-space sweeps: a grid of captures, run on one machine or a Dask cluster.

    trnx sweep -H trn3-ultraserver-gen1 -w llama3.1-70b --phase decode \\
        --grid tp=8,16 --grid batch=1,8 --grid dtype=bf16,fp8 -o sweep/

    import explorer
    sweep = explorer.open_sweep("sweep")          # or: pandas.read_parquet("sweep/results.parquet")
    sweep.results                                 # one row per configuration (a DataFrame)

`grid` parses `--grid` through the capture options' declaration, `spec` holds a sweep's
options, `task` runs one configuration anywhere, `execute` runs many (inline, a local
cluster, a remote one), `results`, `store` and `traces` keep them on disk, `run` ties it
together and `opened` reads a finished sweep back. docs/sweeps.md describes it all.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Sweep", "open_sweep", "run_sweep"]


def __getattr__(name: str) -> Any:
    if name == "run_sweep":
        from explorer.sweep.run import run_sweep

        return run_sweep
    if name in ("Sweep", "open_sweep"):
        from explorer.sweep import opened

        return getattr(opened, name)
    raise AttributeError(f"module 'explorer.sweep' has no attribute {name!r}")
