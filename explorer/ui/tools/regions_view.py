"""QtRegions (objectName `regions`): layers, ops and collectives as regions; two or three side by side.

`explorer.model.regions`: the list filters by name; selecting a region shows it on the timeline
(its range zoomed to and area-selected over every row); selecting two or three (Ctrl+click)
compares their metrics in the table underneath, computed on the tools' worker.
"""

from __future__ import annotations

import math

import pandas as pd
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QLabel, QLineEdit, QSplitter, QVBoxLayout, QWidget

from explorer.model.regions import compare, regions
from explorer.model.units import format_bytes, format_count, format_ns
from explorer.ui.frame_table import Column, FrameTableModel, make_table, ns, text
from explorer.ui.tools.background import run_tool

MAX_COMPARED = 3
LABELS = {
    "duration_ns": ("duration", format_ns), "instructions": ("instructions", lambda v: f"{v:,.0f}"),
    "flops": ("FLOPs", lambda v: f"{format_count(v)}FLOP"), "achieved_tflops": ("achieved", lambda v: f"{v:.3g} TFLOPS"),
    "tensor_busy_percent": ("tensor engine busy", lambda v: f"{v:.3g} %"), "dma_bytes": ("DMA bytes", format_bytes),
    "dma_gbps": ("DMA bandwidth", lambda v: f"{v:.4g} GB/s"), "hbm_read_gbps": ("HBM read", lambda v: f"{v:.4g} GB/s"),
    "hbm_write_gbps": ("HBM write", lambda v: f"{v:.4g} GB/s"), "collective_wait_ns": ("collective wait", format_ns),
}


def _cell(fmt):
    return lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt(v)


class QtRegions(QWidget):
    region_shown = Signal(float, float)  # t0, t1 of the region clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("regions")
        self.index = None
        self.table_frame = pd.DataFrame()
        self.compared = pd.DataFrame()
        self._generation = 0
        self.filter = QLineEdit(objectName="regions-filter", placeholderText="filter regions (layer 3, qkv, all_reduce...)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.model = FrameTableModel([Column("level", "level", text), Column("name", "region", text),
                                      Column("start", "start", ns), Column("duration", "duration", ns)])
        self.list = make_table(self.model, "regions-table")
        self.list.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.list.selectionModel().selectionChanged.connect(lambda *_: self._chosen())
        self.status = QLabel("Select a region to see it; Ctrl+click two or three to compare them.", objectName="regions-status")
        self.status.setWordWrap(True)
        self.cmp_model = FrameTableModel([])
        self.cmp = make_table(self.cmp_model, "regions-compare", sortable=False)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.filter)
        tl.addWidget(self.list, 1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(top)
        split.addWidget(self.cmp)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(split, 1)
        lay.addWidget(self.status)

    def set_index(self, index) -> None:
        self.index = index
        self.table_frame = regions(index) if index is not None else pd.DataFrame(columns=["region", "level", "name", "t0", "t1"])
        origin = float(index.span[0]) if index is not None else 0.0
        df = self.table_frame.assign(start=self.table_frame["t0"] - origin,
                                     duration=self.table_frame["t1"] - self.table_frame["t0"])
        self._all = df
        self._apply_filter(self.filter.text())
        self.cmp_model.columns = []
        self.cmp_model.set_frame(None)

    def _apply_filter(self, text_: str) -> None:
        df = self._all
        needle = text_.strip().lower()
        if needle:
            df = df[df["name"].str.lower().str.contains(needle, regex=False)]
        self.model.set_frame(df)

    def selected_regions(self) -> list[str]:
        rows = sorted({i.row() for i in self.list.selectionModel().selectedRows()})
        return [str(self.model.record(r)["region"]) for r in rows]

    def choose(self, names: list[str]) -> None:
        """Select regions by their names as shown (scripts and tests)."""
        sm = self.list.selectionModel()
        sm.clearSelection()
        for n in names:
            row = self.model.find("name", n)
            if row >= 0:
                sm.select(self.model.index(row, 0), sm.SelectionFlag.Select | sm.SelectionFlag.Rows)

    def _chosen(self) -> None:
        chosen = self.selected_regions()
        if not chosen or self.index is None:
            return
        rec = self._all[self._all["region"] == chosen[-1]].iloc[0]
        self.region_shown.emit(float(rec["t0"]), float(rec["t1"]))
        if len(chosen) > MAX_COMPARED:
            self.status.setText(f"compare at most {MAX_COMPARED} regions at once; showing the first {MAX_COMPARED}.")
            chosen = chosen[:MAX_COMPARED]
        else:
            self.status.setText("computing\u2026")
        index, table = self.index, self.table_frame
        self._generation += 1
        gen = self._generation
        run_tool(lambda: compare(index, table, chosen), lambda ok, v: self._compared(gen, ok, v))

    def _compared(self, gen: int, ok: bool, value) -> None:
        if gen != self._generation:
            return
        if not ok:
            self.status.setText(value)
            return
        self.compared = value
        rows = []
        for key in value.index:
            label, fmt = LABELS[key]
            rows.append({"metric": label, **{c: _cell(fmt)(value.loc[key, c]) for c in value.columns}})
        self.cmp_model.columns = [Column("metric", "metric", text)] + [Column(c, c, text) for c in value.columns]
        self.cmp_model.set_frame(pd.DataFrame(rows))
        self.status.setText(f"{len(value.columns)} region{'s' if len(value.columns) > 1 else ''} side by side "
                            "(each over every row of its range)")
