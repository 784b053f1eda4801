"""Where a time axis puts its ticks and what it writes under them (the ruler and the grid share it)."""

from __future__ import annotations

import math

TICK_PX = 110  # about one labelled tick per this many pixels


def nice_step(raw: float) -> float:
    """The 1-2-5 x 10^k step at or above `raw`."""
    if raw <= 0:
        return 1.0
    k = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10**k >= raw:
            return float(m * 10**k)
    return float(10 ** (k + 1))


def tick_step(t0: float, t1: float, width_px: int) -> float:
    """The tick spacing (ns) for [t0, t1) drawn over `width_px` pixels."""
    return nice_step((t1 - t0) * TICK_PX / max(width_px, 1))


def tick_times(t0: float, t1: float, width_px: int, origin: float) -> list[float]:
    """Absolute times of the ticks visible in [t0, t1], on multiples of the step from `origin`."""
    step = tick_step(t0, t1, width_px)
    first = math.ceil((t0 - origin) / step)
    last = math.floor((t1 - origin) / step)
    return [origin + k * step for k in range(first, min(last, first + 200) + 1)]


def tick_label(t_rel: float, step: float) -> str:
    """A tick's time from trace start in the unit its step calls for."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0)):
        if step * 10 >= scale or unit == "ns":  # 0.5 ms rather than 500 us
            decimals = max(0, -math.floor(math.log10(step / scale) + 1e-9))
            return f"{t_rel / scale:.{decimals}f} {unit}"
    return ""
