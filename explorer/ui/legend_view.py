"""QtLegend: which colour means which opcode / kernel / op / layer."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from explorer.model.units import format_ns
from explorer.ui.frame_table import natural_key
from explorer.ui.palette import category_colours

MAX_ITEMS = 500


class QtLegend(QWidget):
    """Categories of the current colouring (layers and ops in order, others by total time); click one to search it."""

    category_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("legend")
        self.heading = QLabel("Colour by opcode")
        self.list = QListWidget()
        self.list.setObjectName("legend-list")
        self.list.itemClicked.connect(lambda it: self.category_clicked.emit(it.data(Qt.UserRole)))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.heading)
        lay.addWidget(self.list)

    def show_colours(self, index, mode: str) -> None:
        self.list.clear()
        if index is None:
            return
        cc = index.colours(mode)
        colours = category_colours(cc.names)
        total = index.category_time(mode)
        share = index.category_share(mode)
        self.heading.setText(f"Colour by {mode}: {len(cc.names)} categories")
        if mode in ("layer", "op"):  # layer 0, 1, 2, ... 31 (by time they would read 31, 6, 5, ...)
            order = sorted(range(len(cc.names)), key=lambda i: natural_key(cc.names[i]))
        else:  # opcodes and kernels: where the time went first
            order = sorted(range(len(cc.names)), key=lambda i: -total[i])
        for i in order[:MAX_ITEMS]:
            pm = QPixmap(12, 12)
            pm.fill(QColor(colours[i]))
            item = QListWidgetItem(QIcon(pm), f"{cc.names[i]}   {format_ns(total[i])} ({100 * share[i]:.1f}%)")
            item.setData(Qt.UserRole, cc.names[i])
            self.list.addItem(item)

    def names(self) -> list[str]:
        return [self.list.item(i).data(Qt.UserRole) for i in range(self.list.count())]
