"""Trn3 Explorer: open, analyse and view Trainium3 timeline traces.

`explorer.open_trace(path)` is the Python API: every table is a `pyarrow.Table`
and one `.to_pandas(name)` away from a DataFrame. `explorer.open_sweep(path)` reads a
`trnx sweep` directory (its results a DataFrame). `explorer.import_neuron_profile(dirs,
out)` turns Neuron Explorer profiles into a trace. Importing `explorer` never imports Qt;
the GUI lives in `explorer.ui`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simcore.trace import Trace, open_trace

__version__ = "0.1.0"

__all__ = ["Trace", "__version__", "import_neuron_profile", "open_sweep", "open_trace"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so `trnx` installs its error handling (one sentence for running out of
    # memory too) before numpy, pandas and pyarrow load: under a tight `ulimit -v` they fail to load.
    if name in ("Trace", "open_trace"):
        import simcore.trace

        return getattr(simcore.trace, name)
    if name == "import_neuron_profile":  # imported on first use: it loads pyarrow.parquet
        from explorer.interop.neuron_profile import import_neuron_profile

        return import_neuron_profile
    if name == "open_sweep":  # imported on first use: it loads pandas and pyarrow.parquet
        from explorer.sweep.opened import open_sweep

        return open_sweep
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
