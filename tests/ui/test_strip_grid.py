"""The roofline's grid, drawn as one strip image per axis (explorer/ui/strip_grid.py), is pixel
for pixel the grid pyqtgraph draws line by line, in both themes, for kernels of several traces;
an export at another scale draws pyqtgraph's lines."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from ui.analysis_helpers import SAMPLES

from explorer.model.analysis.kernel_details import kernel_details
from explorer.ui import roofline_plot
from explorer.ui.strip_grid import StripGridAxis
from explorer.ui.themes import apply_theme
from simcore.trace import open_trace


@pytest.fixture
def theme():
    yield apply_theme
    apply_theme("dark")  # the theme is application-wide: leave the default for other tests


def _pixels(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_ARGB32)
    return np.frombuffer(img.constBits(), np.uint32, img.width() * img.height()).reshape(img.height(), img.width()).copy()


def _settled(roof) -> np.ndarray:
    """The plot's pixels once a further pass of the event loop changes none (pyqtgraph places its
    axes' widths as it first paints them)."""
    last = None
    for _ in range(20):
        QApplication.processEvents()
        now = _pixels(roof.plot.grab().toImage())
        if last is not None and now.shape == last.shape and (now == last).all():
            return now
        last = now
    raise AssertionError("the plot kept changing")


def _pair(qtbot, monkeypatch):
    ours = roofline_plot.QtRoofline()
    with monkeypatch.context() as m:
        m.setattr(roofline_plot, "StripGridAxis", pg.AxisItem)  # pyqtgraph's own axes: the reference
        theirs = roofline_plot.QtRoofline()
    assert isinstance(ours.plot.getAxis("left"), StripGridAxis)
    assert not isinstance(theirs.plot.getAxis("left"), StripGridAxis)
    for r in (ours, theirs):
        qtbot.addWidget(r)
        r.resize(460, 330)
        r.show()
        qtbot.waitExposed(r)
    return ours, theirs


def _show(d, *roofs) -> list[np.ndarray]:
    """Each of `roofs` showing kernel details `d`, and its settled pixels."""
    for r in roofs:
        r.show_roofline(d.roofline, str(d.kernel["name"]))
        r.caption.setMinimumHeight(120)  # (the same room for both plots whatever the caption)
    return [_settled(r) for r in roofs]


def _kernels(trace_path):
    tiny = open_trace(trace_path)
    decode = open_trace(SAMPLES / "llama3.1-8b-decode.trnx")
    mxfp8 = open_trace(SAMPLES / "gemm-4096-mxfp8.trnx")
    return [kernel_details(tiny, 0), kernel_details(tiny, 1), kernel_details(decode, 0), kernel_details(decode, 344),
            kernel_details(decode, 1031), kernel_details(mxfp8, 0)]


@pytest.mark.parametrize("name", ["dark", "light"])
def test_the_roofline_grid_is_the_pixels_pyqtgraph_draws(qtbot, monkeypatch, trace_path, theme, name):
    theme(name)
    ours, theirs = _pair(qtbot, monkeypatch)
    for d in _kernels(trace_path):
        a, b = _show(d, ours, theirs)
        assert a.shape == b.shape
        assert (a == b).all(), f"kernel {int(d.kernel['kernel_id'])}: {(a != b).sum()} pixels differ"
        for axis in ("left", "bottom"):  # drawn as strips, not by the fallback
            strips = ours.plot.getAxis(axis)._strip[1]
            assert strips and all(img.width() > 1 and img.height() > 1 for img, _, _ in strips)


def test_an_export_at_another_scale_draws_the_same_grid(qtbot, monkeypatch, trace_path):
    ours, theirs = _pair(qtbot, monkeypatch)
    d = _kernels(trace_path)[2]
    _show(d, ours, theirs)
    images = []
    for r in (ours, theirs):
        img = QImage(r.plot.width() * 2, r.plot.height() * 2, QImage.Format_ARGB32)
        img.fill(0)
        p = QPainter(img)
        r.plot.scene().render(p, QRectF(img.rect()), QRectF(r.plot.viewport().rect()))
        p.end()
        images.append(_pixels(img))
    assert (images[0] == images[1]).all()
