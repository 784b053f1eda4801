"""GUI-thread CPU of a repaint of the operator tree, through TextCells and through Qt's own delegate.

    QT_QPA_PLATFORM=offscreen python bench/cell_paint.py [TRACE] [--repeats N]

Opens TRACE (default: the GEMM sample, whose kernel has 16,896 events) in the real window at
1920x1080, expands the operator tree to an event 300 rows down the biggest kernel, and times
`viewport().repaint()` (`time.thread_time`) with the tree's delegate (`TextCells`) and, in the same
process, with Qt's `QStyledItemDelegate` (the baseline): "warm" repaints the same rows again (a
hover, a click, a scroll back), "fresh" first forgets every formatted and laid-out text (what a
jump to rows never painted costs). The least and the median of `--repeats` repaints each, the two
delegates alternated: on a loaded shared machine the least is the steadier figure. The cost
depends on the visible cells, not the trace's size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, nargs="?", default=ROOT / "sample_traces" / "gemm-4096-bf16.trnx")
    ap.add_argument("--repeats", type=int, default=25)
    args = ap.parse_args()
    from gui_window import open_analysed

    _, w, spin = open_analysed(args.trace, ROOT, settle=1, show=True)
    from PySide6.QtWidgets import QStyledItemDelegate

    from explorer.ui.operators_view import kernel_table

    ops = w.analysis.operators
    h = ops.model.h
    k = h.kernels.assign(events=h.kernels["instruction_count"] + h.kernels["dma_count"]).sort_values("events").iloc[-1]
    kernel = f"kernel:{int(k['kernel_id'])}"
    rows = h.children(kernel)
    ops.model.keep_kernel_rows(h, kernel, rows, kernel_table(rows, None, True))
    ops.select_node(rows["node"].iloc[min(300, len(rows) - 1)])
    spin(0.5)
    view, viewport = ops.view, ops.view.viewport()
    ours, qt = view.itemDelegate(), QStyledItemDelegate(view)

    def forget() -> None:
        stack = [ops.model.root]
        while stack:
            n = stack.pop()
            n.texts = None
            stack.extend(n.children)
        ours._texts.clear()

    def cpu_ms(f) -> float:
        c = time.thread_time()
        f()
        return (time.thread_time() - c) * 1e3

    times: dict[str, list[float]] = {f"{d} {m}": [] for d in ("TextCells", "Qt") for m in ("warm", "fresh")}
    for _ in range(args.repeats):
        for name, delegate in (("TextCells", ours), ("Qt", qt)):
            view.setItemDelegate(delegate)
            viewport.repaint()
            times[f"{name} warm"].append(cpu_ms(viewport.repaint))
            forget()
            times[f"{name} fresh"].append(cpu_ms(viewport.repaint))
    view.setItemDelegate(ours)
    out = {"trace": str(args.trace), "viewport": [viewport.width(), viewport.height()],
           "cells": sum(1 for c in range(ops.model.columnCount()) if not view.isColumnHidden(c))
           * (viewport.height() // max(1, view.sizeHintForRow(0))),
           "load_1min": round(os.getloadavg()[0], 1)}
    out.update({f"{name} repaint ms (least, median)": [round(min(v), 2), round(statistics.median(v), 2)]
                for name, v in times.items()})
    print(json.dumps(out))
    w.close()


if __name__ == "__main__":
    main()
