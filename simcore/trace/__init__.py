"""Trace format v1: schema, streaming atomic writer and validating reader."""

from simcore.trace.reader import Trace, open_trace
from simcore.trace.schema import FORMAT_VERSION, TABLES, TRACK_KINDS
from simcore.trace.writer import TraceWriter, write_trace

__all__ = ["FORMAT_VERSION", "TABLES", "TRACK_KINDS", "Trace", "TraceWriter", "open_trace", "write_trace"]
