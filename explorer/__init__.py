"""Trn3 Explorer: open, analyse and view Trainium3 timeline traces.

`explorer.open_trace(path)` is the Python API: every table is a `pyarrow.Table`
and one `.to_pandas(name)` away from a DataFrame. Importing `explorer` never
imports Qt; the GUI lives in `explorer.ui`.
"""

from simcore.trace import Trace, open_trace

__version__ = "0.1.0"

__all__ = ["Trace", "__version__", "open_trace"]
