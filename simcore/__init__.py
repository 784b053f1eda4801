"""simcore: a Trainium3 execution simulator that writes engine-level timeline traces.

simcore is pure Python + numpy + pyarrow. It never imports `explorer` or Qt, so the
simulator runs (and is tested) on machines without a display.
"""

__version__ = "0.1.0"



def __getattr__(name: str):
    """`simcore.capture(...)` without importing the simulator until it is used."""
    if name == "capture":
        import importlib

        return importlib.import_module("simcore.capture")  # a callable module: simcore.capture(...) runs a capture
    raise AttributeError(f"module 'simcore' has no attribute {name!r}")
