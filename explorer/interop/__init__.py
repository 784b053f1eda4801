"""Interop with the tools people already use: import of PyTorch-profiler (Kineto) traces."""

from explorer.interop.kineto.importer import ImportReport, import_kineto
from explorer.interop.kineto.reader import KinetoFile, load_kineto

__all__ = ["ImportReport", "KinetoFile", "import_kineto", "load_kineto"]
