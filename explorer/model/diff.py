"""Old path of `explorer.model.analysis.diff`, kept for scripts (docs/python-api.md named it)."""

from explorer.model.analysis.diff import TraceDiff, diff

__all__ = ["TraceDiff", "diff"]
