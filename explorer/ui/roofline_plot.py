"""QtRoofline: a kernel on the log-log roofline of its dtype (pyqtgraph).

Everything drawn comes from `explorer.model.analysis.kernel_details.Roofline`: the compute
roof of the kernel's dtype (per core), the HBM roof at the core's share of its chip's
bandwidth, their ridge, the whole chip's HBM roof (dotted, for comparison), the other
dtypes' compute roofs (dashed: what a cheaper dtype would allow) and the kernel's point
(arithmetic intensity, achieved TFLOPS). The roof lines are `Roofline.attainable_tflops`
sampled along the intensity axis.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from explorer.model.analysis.kernel_details import Roofline
from explorer.model.units import format_rate_gbps
from explorer.ui.panes import keep_tallest
from explorer.ui.strip_grid import StripGridAxis

ROOF_COLOUR = "#61afef"
OTHER_COLOURS = ("#98c379", "#e5c07b", "#c678dd", "#56b6c2", "#d19a66")
POINT_COLOUR = "#e06c75"
CHIP_COLOUR = "#8a909c"


class QtRoofline(QWidget):
    """Log-log plot: FLOP per HBM byte on x, TFLOPS on y."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("roofline")
        self.roofline: Roofline | None = None
        # (the theme sets pyqtgraph's default background and restyles plots; the axes draw the grid
        # as one image each: pyqtgraph's line-by-line grid was most of a kernel's plot paint)
        self.plot = pg.PlotWidget(axisItems={"left": StripGridAxis("left"), "bottom": StripGridAxis("bottom")})
        self.plot.setObjectName("roofline-plot")
        self.plot.setLogMode(x=True, y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setLabel("bottom", "arithmetic intensity", units="FLOP/B")
        self.plot.setLabel("left", "achieved", units="TFLOPS")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.hideButtons()
        self.items: dict[str, pg.GraphicsObject] = {}  # what the shown kernel's plot is made of
        self._kept: dict[str, pg.GraphicsObject] = {}  # every item made so far, hidden when unused
        self.caption = QLabel("")  # the legend, under the plot so it never hides a line
        self.caption.setObjectName("roofline-caption")
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.RichText)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.caption)
        # the items every kernel's plot uses, made now (hidden) instead of for the first kernel
        # shown, where making them cost ~20 ms of the GUI thread (a `trnx view --goto kernel:N`)
        for key, z, symbol in (("roof", 0, None), ("chip-roof", 0, None), ("ridge", 2, "d"), ("point", 3, "o")):
            self._curve(key, [], [], z, symbol=symbol)
        for i, colour in enumerate(OTHER_COLOURS):  # the other dtypes' roofs, by their place in the legend
            self._curve(f"roof:{i}", [], [], 0)
            self._text(f"tag:{i}", "", colour, (1, 1), 0.0, 0.0, z=1)
        self._text("label", "", POINT_COLOUR, (0, 1.2), 0.0, 0.0, z=4)
        self._hide_all()

    def clear(self) -> None:
        self._hide_all()
        self.caption.setText("")
        # 0.1 .. 10k FLOP/B and 0.1 .. 1000 TFLOPS until a kernel is shown
        self.plot.setRange(xRange=(-1, 4), yRange=(-1, 3), padding=0)

    def _hide_all(self) -> None:
        for item in self._kept.values():
            item.hide()
        self.items = {}
        self.roofline = None

    def _curve(self, key: str, x, y, z: int = 0, **style) -> pg.PlotDataItem:
        """The curve `key`, made once and then given new data and style (making pyqtgraph items
        was half of a kernel's ~25 ms plot at 28M events); `z` keeps the stacking a fresh plot had."""
        item = self._kept.get(key)
        # (no dynamic range limit: the roofs are finite, and with one every item redid its data on
        # each change of the view's range -- most of a kernel's 10-25 ms of GUI time)
        style = {"pen": None, "symbol": None, "dynamicRangeLimit": None, **style}
        if item is None:
            item = self._kept[key] = self.plot.plot(x, y, **style)
            item.setZValue(z)
        else:
            item.setData(x, y, **style)
            item.show()
        self.items[key] = item
        return item

    def _text(self, key: str, text: str, colour: str, anchor: tuple[float, float], x: float, y: float,
              z: int) -> pg.TextItem:
        item = self._kept.get(key)
        if item is None:
            item = self._kept[key] = pg.TextItem(text, color=colour, anchor=anchor)
            item.setZValue(z)
            self.plot.addItem(item)
        else:
            item.setText(text, color=colour)
            item.show()
        item.setPos(x, y)
        return item

    def show_roofline(self, roof: Roofline | None, label: str = "kernel") -> None:
        if roof is None:
            self.clear()
            return
        self._hide_all()  # (the range is set once, below: each change re-lays the axes and items)
        self.roofline = roof
        ridge = roof.ridge_intensity
        ai = roof.point_intensity
        parts: list[str] = []
        lo = min([x for x in (ai, ridge) if x] or [1.0]) / 30
        hi = max([x for x in (ai, ridge) if x] or [1.0]) * 30
        xs = np.logspace(np.log10(lo), np.log10(hi), 200)
        y = roof.attainable_tflops(xs)
        if y is not None:
            self._curve("roof", xs, y, pen=pg.mkPen(ROOF_COLOUR, width=2.5))
            share = (f"the core's share of the chip's {format_rate_gbps(roof.chip_bandwidth_gbps)}, "
                     f"{roof.hbm_sharing:.3g} cores streaming" if roof.hbm_sharing > 1.001 else "the chip's, unshared")
            parts.append(f"<span style='color:{ROOF_COLOUR}'>—</span> {roof.dtype} roof: {roof.peak_tflops:g} "
                         f"TFLOPS per core, HBM {format_rate_gbps(roof.bandwidth_gbps)} ({share})")
            if roof.chip_bandwidth_gbps and roof.hbm_sharing > 1.001:
                chip = np.minimum(roof.peak_tflops, xs * roof.chip_bandwidth_gbps / 1e3)
                self._curve("chip-roof", xs, chip, pen=pg.mkPen(CHIP_COLOUR, width=1, style=Qt.DotLine))
                sat = "" if roof.chip_hbm_percent is None else f"; the chip's HBM was {roof.chip_hbm_percent:.0f}% busy"
                parts.append(f"<span style='color:{CHIP_COLOUR}'>┄</span> the whole chip's HBM roof{sat}")
            by_peak: dict[float, list[str]] = {}  # dtypes sharing a peak share a line (mxfp8/mxfp4)
            for dtype, peak in roof.other_peaks.items():
                if peak != roof.peak_tflops:
                    by_peak.setdefault(peak, []).append(dtype)
            for i, peak in enumerate(sorted(by_peak, reverse=True)):
                other = roof.attainable_tflops(xs, peak=peak)
                colour = OTHER_COLOURS[i % len(OTHER_COLOURS)]
                name = "/".join(by_peak[peak])
                self._curve(f"roof:{i}", xs, other, pen=pg.mkPen(colour, width=1, style=Qt.DashLine))
                self._text(f"tag:{i}", f"{name} {peak:g}", colour, (1, 1), np.log10(hi), np.log10(peak), z=1)
            if ridge:
                self._curve("ridge", [ridge], [roof.peak_tflops], z=2, symbol="d", symbolSize=8, symbolBrush=ROOF_COLOUR)
                parts.append(f"<span style='color:{ROOF_COLOUR}'>◆</span> ridge at {ridge:.3g} FLOP/B")
        if ai is not None and roof.point_tflops > 0:
            eff = roof.efficiency_percent
            tag = f"{label}: {roof.point_tflops:.3g} TFLOPS at {ai:.3g} FLOP/B" + (
                f" ({eff:.0f}% of its roof)" if eff is not None else "")
            self._curve("point", [ai], [roof.point_tflops], z=3, symbol="o", symbolSize=11, symbolBrush=POINT_COLOUR,
                        symbolPen=pg.mkPen("#ffffff"))
            parts.append(f"<span style='color:{POINT_COLOUR}'>●</span> {tag}")
            self.items["label"] = self._text("label", label, POINT_COLOUR, (0, 1.2), np.log10(ai), np.log10(roof.point_tflops),
                                              z=4)
        if roof.other_peaks:
            parts.append("dashed: the other dtypes' roofs")
        if ai is None:
            parts.append("no HBM bytes: the kernel has no intensity to place it at")
        self.caption.setText(" &nbsp; ".join(parts))
        # the caption at its new height (kept at the tallest it has been) and the plot at what is
        # left, before the plot is drawn: a caption that grew after the paint resized the plot, which
        # drew it again (the first kernel of a trace, 5-15 ms at 28M events)
        keep_tallest(self.caption)
        self.layout().activate()
        ys = [v for v in (roof.peak_tflops, *roof.other_peaks.values(), roof.point_tflops) if v]
        if ys:
            self.plot.setRange(xRange=(np.log10(lo), np.log10(hi)),
                               yRange=(np.log10(min(ys) / 100), np.log10(max(ys) * 3)), padding=0)
        else:
            self.plot.setRange(xRange=(-1, 4), yRange=(-1, 3), padding=0)
        # the view's transform and the labels placed for the new range now: pyqtgraph does it as
        # the plot is painted, and what it moves then asks for a second repaint (~10 ms)
        self.plot.getViewBox().updateMatrix()
        for item in self._kept.values():
            if isinstance(item, pg.TextItem) and item.isVisible():
                item.updateTransform(force=True)

    def point(self) -> tuple[float, float] | None:
        """The kernel's plotted (intensity, TFLOPS), None when it has no point."""
        item = self.items.get("point")
        if item is None:
            return None
        x, y = item.getOriginalDataset()  # (getData is in log10 units in log mode)
        return float(x[0]), float(y[0])
