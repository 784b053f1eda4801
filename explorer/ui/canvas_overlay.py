"""CanvasOverlay: a transparent widget laid over a timeline `TrackCanvas`, what the wait-chain
outline (path_overlay) and a recommendation's warning bands (evidence_bands) draw on.

Mouse events pass through it to the canvas, it follows the canvas's size, and as a child it
paints right after the canvas does, so it moves with every zoom and scroll for free.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from explorer.ui.track_canvas import TrackCanvas


class CanvasOverlay(QWidget):
    """Hidden until `reveal`; subclasses keep what they draw and paint it in `paintEvent`."""

    def __init__(self, canvas: TrackCanvas, colour: str, name: str) -> None:
        super().__init__(canvas)
        self.canvas = canvas
        self.colour = QColor(colour)
        self.setObjectName(name)
        self.setAttribute(Qt.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WA_NoSystemBackground)
        self.label = ""
        canvas.installEventFilter(self)
        self.setGeometry(canvas.rect())
        self.hide()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if obj is self.canvas and event.type() == QEvent.Resize:
            self.setGeometry(self.canvas.rect())
        return False

    def reveal(self, label: str) -> None:
        """Show what was just set, over the whole canvas and above its other overlays."""
        self.label = label
        self.setGeometry(self.canvas.rect())
        self.show()
        self.raise_()
        self.update()
