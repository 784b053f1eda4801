"""Old path of `explorer.model.analysis.temporal`, kept for scripts (docs/metrics.md named it)."""

from explorer.model.analysis.temporal import TemporalSummary, breakdown, stragglers, temporal_summary

__all__ = ["TemporalSummary", "breakdown", "stragglers", "temporal_summary"]
