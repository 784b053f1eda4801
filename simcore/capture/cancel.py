"""Progress and cancellation shared by every stage of a capture (no other capture module
below it, so any stage can raise or check without importing the engine)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simcore.errors import UserError

Progress = Callable[[float, str], Any]   # progress(fraction, message), fractions increasing to 1.0


class CaptureCancelled(UserError):
    """The caller cancelled the capture; nothing was written."""


def check_cancel(cancel: Any) -> None:
    """Raise CaptureCancelled when `cancel` (anything with is_set(), or None) is set."""
    if cancel is not None and cancel.is_set():
        raise CaptureCancelled("capture cancelled; nothing was written.")
