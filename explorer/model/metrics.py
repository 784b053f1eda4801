"""Old path of `explorer.model.analysis.metrics`, kept for scripts (docs/metrics.md named it)."""

from explorer.model.analysis.metrics import METRICS, format_metric, markdown_table

__all__ = ["METRICS", "format_metric", "markdown_table"]
