"""Panels whose work waits until they are on screen: a hidden tab costs nothing on every open.

`WhenShown` is mixed in before the Qt widget class: after new input a panel calls
`refresh_when_shown(has_input)`; `refresh()` (the panel's own) then runs at once if the panel
is visible, else the next time it is shown.
"""

from __future__ import annotations


class WhenShown:
    """Mixin for a QWidget subclass with a `refresh()`; `stale`: input not yet computed."""

    stale = False

    def refresh_when_shown(self, has_input: bool) -> None:
        self.stale = has_input
        if self.stale and self.isVisible():
            self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.stale:
            self.refresh()
