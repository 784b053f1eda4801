"""How a counter row reads in the timeline's gutter: its name and the line under it.

Most counters read "peak X (Y% of hw)". The trace's `Throttling` counter holds the rate
the tensor engine was allowed (100 % = not throttled), so its row is named for what it
measures and says its lowest value, where a "peak 100 %" would suggest full throttling.
"""

from __future__ import annotations

from simcore.trace.schema import COUNTER_THROTTLE

ROW_NAMES = {COUNTER_THROTTLE: "Tensor rate allowed (Throttling)"}


def row_name(name: str) -> str:
    """A counter track's row label."""
    return ROW_NAMES.get(name, name)


def caption(name: str, peak: float, low: float, reference: float | None, text: callable) -> str:
    """The line under a counter row's name; `text(value)` formats a value in the counter's unit."""
    if name == COUNTER_THROTTLE:
        return "not throttled (100 % all along)" if low >= 100.0 else f"lowest {text(low)}; 100 % = full rate"
    out = f"peak {text(peak)}"
    return out + (f" ({100 * peak / reference:.0f}% of hw)" if reference else "")
