"""QtRecommendations (objectName `recommendations`): what to fix, biggest impact first.

Shows `explorer.model.analysis.recommendations.recommend`'s findings as they are: the title
and impact of each, its advice and evidence, and its links. Clicking a link emits
`link_activated(Link)`; the session follows it (zooms the timeline to its range,
selects its kernel, event or area, and the operator-tree row). The shown
recommendation's evidence is drawn on the timeline as warning bands while "Show the
evidence on the timeline" is ticked (`evidence_changed(Recommendation | None)`).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QLabel, QListWidget, QListWidgetItem, QSplitter, QTextBrowser, QVBoxLayout, QWidget,
)

from explorer.model.analysis.recommendations import Link, Recommendation
from explorer.model.units import format_ns


class QtRecommendations(QWidget):
    link_activated = Signal(object)  # Link
    evidence_changed = Signal(object)  # the Recommendation whose bands to draw, or None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recommendations")
        self.recommendations: list[Recommendation] = []
        self.status = QLabel("Open a trace to see recommendations.")
        self.status.setObjectName("recommendations-status")
        self.status.setWordWrap(True)
        self.list = QListWidget()
        self.list.setObjectName("recommendations-list")
        self.list.setWordWrap(True)
        self.list.currentRowChanged.connect(self._show)
        self.list.itemClicked.connect(lambda _item: self._emit_evidence())  # (the first row is current already)
        self._filling = False  # the list is being filled: no evidence drawn until a recommendation is chosen
        self.text = QTextBrowser()
        self.text.setObjectName("recommendations-text")
        self.text.setOpenLinks(False)
        self.links = QListWidget()
        self.links.setObjectName("recommendations-links")
        self.links.setToolTip("Click to go there in the timeline and the operator tree.")
        self.links.itemClicked.connect(self._link_clicked)
        self.links.itemActivated.connect(self._link_clicked)
        self.links_label = QLabel("Where in the trace (click to go there)")
        self.show_evidence = QCheckBox("Evidence on the timeline")
        self.show_evidence.setObjectName("recommendations-show-evidence")
        self.show_evidence.setChecked(True)
        self.show_evidence.setToolTip("Draw the chosen recommendation's evidence as warning bands on the timeline.")
        self.show_evidence.toggled.connect(lambda _on: self._emit_evidence())
        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.text, 3)
        ll.addWidget(self.show_evidence)
        ll.addWidget(self.links_label)
        ll.addWidget(self.links, 1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.list)
        split.addWidget(lower)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.status)
        lay.addWidget(split, 1)

    def set_recommendations(self, recs: list[Recommendation] | None) -> None:
        self.recommendations = list(recs or [])
        self.list.clear()
        self.links.clear()
        self.text.clear()
        self._emit_evidence()
        if recs is None:
            self.status.setText("Open a trace to see recommendations.")
            return
        if not recs:
            self.status.setText("No rule fired: nothing explains 5% or more of the time it is measured against.")
            return
        self.status.setText(f"{len(recs)} recommendations, the most critical-path time first; choose one to see "
                            "its evidence on the timeline.")
        self._filling = True
        for r in recs:
            item = QListWidgetItem(f"{r.title}\n    {format_ns(r.impact_ns)} on the critical path "
                                   f"({r.impact_percent:.1f}% of the trace) \u2014 {r.rule}")
            item.setToolTip(r.advice)
            self.list.addItem(item)
        self.list.setCurrentRow(0)
        self._filling = False

    def set_busy(self, busy: bool) -> None:
        if busy:
            self.status.setText("Running the recommendation rules\u2026")

    def _show(self, row: int) -> None:
        self.links.clear()
        self._emit_evidence()
        if not 0 <= row < len(self.recommendations):
            self.text.clear()
            return
        r = self.recommendations[row]
        ev = "".join(f"<tr><td>{html.escape(label)}</td><td align='right'>{html.escape(text)}</td></tr>"
                     for label, text in r.evidence_rows())
        self.text.setHtml(
            f"<h3>{html.escape(r.title)}</h3>"
            f"<p><b>Impact</b>: {format_ns(r.impact_ns)} of the trace's critical path ({r.impact_percent:.1f}% of its "
            f"wall-clock time; rule <code>{r.rule}</code>)</p>"
            f"<p><b>What to do</b>: {html.escape(r.advice)}</p>"
            f"<h4>Evidence</h4><table cellspacing='0' cellpadding='2'>{ev}</table>")
        for link in r.links:
            item = QListWidgetItem(f"\u2192 {link.label}")
            item.setData(Qt.UserRole, link)
            item.setToolTip(f"{link.node or 'range'}: {format_ns(link.t0)} \u2013 {format_ns(link.t1)} on "
                            f"{len(link.track_ids)} timeline rows")
            self.links.addItem(item)

    def current(self) -> Recommendation | None:
        row = self.list.currentRow()
        return self.recommendations[row] if 0 <= row < len(self.recommendations) else None

    def _emit_evidence(self) -> None:
        if self._filling:
            return
        self.evidence_changed.emit(self.current() if self.show_evidence.isChecked() else None)

    def _link_clicked(self, item: QListWidgetItem) -> None:
        link = item.data(Qt.UserRole)
        if isinstance(link, Link):
            self.link_activated.emit(link)
