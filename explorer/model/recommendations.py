"""Old path of `explorer.model.analysis.recommendations`, kept for scripts (docs/python-api.md named it)."""

from explorer.model.analysis.recommendations import Link, Recommendation, recommend

__all__ = ["Link", "Recommendation", "recommend"]
