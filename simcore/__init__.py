"""simcore: a Trainium3 execution simulator that writes engine-level timeline traces.

simcore is pure Python + numpy + pyarrow. It never imports `explorer` or Qt, so the
simulator runs (and is tested) on machines without a display.
"""

__version__ = "0.1.0"
