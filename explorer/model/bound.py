"""Old path of `explorer.model.analysis.bound`, kept for scripts (docs/metrics.md named it)."""

from explorer.model.analysis.bound import BOUNDS, classify

__all__ = ["BOUNDS", "classify"]
