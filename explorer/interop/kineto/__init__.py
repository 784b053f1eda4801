"""PyTorch-profiler (Kineto) JSON import: read (reader, scan, scanned), build the trace (events, nesting,
collectives, builder) and drive the per-rank files (importer)."""
