"""Old path of `explorer.model.analysis.summary`, kept for scripts (docs/python-api.md named it)."""

from explorer.model.analysis.summary import Summary, summarize, summarize_per_chip

__all__ = ["Summary", "summarize", "summarize_per_chip"]
