"""TextCells: an item delegate that paints a view's text cells from laid-out text it keeps.

Qt's own delegate asks the model seven roles per visible cell (seven calls into Python) and lays
the text out twice on every paint (once to size it, once to draw it, shaping it with HarfBuzz
each time): a repaint of the operator tree at 1920x1080, ~200 cells, cost 10-13 ms of the GUI
thread, which a jump pays after every navigation. This delegate asks the model once per cell
(`cell(index) -> (text, alignment, colour or None)`), lets the style draw the cell without its
text -- background, alternate rows and selection exactly as before -- and draws the text as a
`QStaticText` kept per (text, width): the same elided text, pen and place Qt's `QCommonStyle`
would give it (`tests/ui/test_text_cells.py` compares the pixels). The current cell, whose focus
frame is laid out around its text, is left to Qt's delegate (one cell a view).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QPointF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPalette, QStaticText
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

Cell = tuple[str, int, QColor | None]  # text, Qt.Alignment as an int, foreground (None: the palette's)
KEPT = 4096  # laid-out texts kept (a 1920x1080 view shows ~200 cells; column widths change rarely)

# (plain ints: PySide6's enums are Python enums, and one `&` on them costs ~1.6 us, a cell's paint a dozen)
_SELECTED = QStyle.StateFlag.State_Selected.value
_ENABLED = QStyle.StateFlag.State_Enabled.value
_ACTIVE = QStyle.StateFlag.State_Active.value
_FOCUS = QStyle.StateFlag.State_HasFocus.value
_RIGHT = Qt.AlignmentFlag.AlignRight.value
_HCENTER = Qt.AlignmentFlag.AlignHCenter.value
_TOP = Qt.AlignmentFlag.AlignTop.value
_BOTTOM = Qt.AlignmentFlag.AlignBottom.value
_ITEM = QStyle.ControlElement.CE_ItemViewItem
_GROUPS = (QPalette.ColorGroup.Normal, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled)


class TextCells(QStyledItemDelegate):
    """Paints cells whose only content is one line of text (no icons, check boxes or editors)."""

    def __init__(self, cell: Callable[[QModelIndex], Cell], view: QWidget) -> None:
        super().__init__(view)
        self.cell = cell
        self._texts: dict[tuple[str, int], tuple[QStaticText, float]] = {}  # (text, width) -> laid out, its width
        self._font: QFont | None = None
        self._metrics = QFontMetricsF(view.font())
        self._height = 0
        self._margin = 3
        self._pens: dict[tuple[int, int], tuple[QColor, QColor]] = {}  # (palette, group) -> (selected, plain) pens

    def _laid_out(self, text: str, width: int) -> tuple[QStaticText, float]:
        key = (text, width)
        got = self._texts.get(key)
        if got is None:
            if len(self._texts) >= KEPT:
                self._texts.clear()
            st = self._static(text)  # (laid out once: its width without shaping the text again)
            w = st.size().width()
            if w > width:
                shown = self._metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)
                st = self._static(shown)
                w = st.size().width()
            got = self._texts[key] = (st, w)
        return got

    def _static(self, text: str) -> QStaticText:
        st = QStaticText(text)
        st.setTextFormat(Qt.TextFormat.PlainText)
        st.prepare(font=self._font)
        return st

    def _new_font(self, font: QFont, widget: QWidget | None) -> None:
        """A theme or font change (or the first paint): lay every text out again."""
        self._font = QFont(font)
        self._metrics = QFontMetricsF(font)
        self._height = round(self._metrics.height())
        self._texts.clear()
        style = widget.style() if widget is not None else None
        self._margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 1 if style else 3

    def _pen(self, palette: QPalette, state: int, selected: bool) -> QColor:
        group = 0 if state & _ENABLED else 2
        if group == 0 and not state & _ACTIVE:
            group = 1
        key = (palette.cacheKey(), group)
        pens = self._pens.get(key)
        if pens is None:
            if len(self._pens) > 64:
                self._pens.clear()
            g = _GROUPS[group]
            pens = self._pens[key] = (palette.color(g, QPalette.ColorRole.HighlightedText),
                                      palette.color(g, QPalette.ColorRole.Text))
        return pens[0] if selected else pens[1]

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        state = option.state.value
        if state & _FOCUS:  # the current cell (one a view): its focus frame is laid out around its text
            super().paint(painter, option, index)
            return
        widget = option.widget
        # the cell without its text: background, alternate row and selection as Qt draws them
        (widget.style() if widget is not None else QApplication.style()).drawControl(_ITEM, option, painter, widget)
        text, align, colour = self.cell(index)
        if not text:
            return
        font = option.font
        if font != self._font:
            self._new_font(font, widget)
        rect = option.rect
        m = self._margin
        width = rect.width() - 2 * m
        if width <= 0:
            return
        st, w = self._laid_out(text, width)
        selected = bool(state & _SELECTED)
        # (Qt sets a foreground for every colour group: a coloured cell does not grey when disabled)
        painter.setPen(colour if colour is not None and not selected else self._pen(option.palette, state, selected))
        x = rect.x() + m
        if align & _RIGHT:
            x += width - w
        elif align & _HCENTER:
            x += (width - w) / 2
        # (in whole pixels, as QStyle.alignedRect places the text's rounded height)
        if align & _TOP:
            y = rect.y()
        elif align & _BOTTOM:
            y = rect.y() + rect.height() - self._height
        else:
            y = rect.y() + rect.height() // 2 - self._height // 2
        painter.drawStaticText(QPointF(x, y), st)
