"""What part of a trace an export covers: the `Scope` in the exporter's options.

Every exporter reads the same scope (`options["scope"]`, what `trnx export --range
--chips --cores` parse to), so a filtered export means the same thing in every format.
Timeline rows are kept whole: an interval that overlaps the window is exported with
its real start and end; table exports (Parquet, CSV) read the chips' partitions.
"""

from __future__ import annotations

from typing import Any

from simcore.trace import Trace

from explorer.model.tracks import Tracks
from explorer.model.scope import Scope


def export_scope(trace: Trace, options: dict[str, Any], *, check: bool = True) -> Scope:
    """The options' scope (everything when absent), checked against the trace (its tracks and span)."""
    scope = options.get("scope") or Scope()
    if check:  # the chips, cores and tracks it names, and a window in the trace (Scope.resolve)
        scope.resolve(trace, Tracks.of(trace))
    return scope
