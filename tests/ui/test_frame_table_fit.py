"""Frame tables fit their columns to new rows, in the pass of the event loop after the fill."""

from __future__ import annotations

import pandas as pd

from explorer.ui import frame_table as F


def test_columns_fit_the_new_rows_once_the_window_breathes(qtbot):
    model = F.FrameTableModel([F.Column("name", "name"), F.Column("n", "count", F.count), F.Column("x", "x")])
    view = F.make_table(model, "fit-test")
    qtbot.addWidget(view)
    view.resize(900, 200)
    view.show()
    model.set_frame(pd.DataFrame({"name": ["a"], "n": [1], "x": [""]}))
    qtbot.waitUntil(lambda: view.columnWidth(1) == max(view.sizeHintForColumn(1), view.horizontalHeader().sectionSizeHint(1)))
    narrow = view.columnWidth(0)
    long = "a much longer event name than the first one, " * 2
    model.set_frame(pd.DataFrame({"name": ["b", long], "n": [2, 3_000_000], "x": ["", ""]}))
    model.set_frame(F.table_rows(pd.DataFrame({"name": ["b", long], "n": [2, 3_000_000], "x": ["", ""]})))
    qtbot.waitUntil(lambda: view.columnWidth(0) > narrow)
    assert view.columnWidth(0) >= view.fontMetrics().horizontalAdvance(long)
    assert model.cell_text(1, "n") == "3,000,000" and model.rowCount() == 2


def test_the_last_column_still_fills_the_table_after_a_fit(qtbot):
    """A table's last column (a note, a name) takes the width the others leave, after new rows too."""
    model = F.FrameTableModel([F.Column("n", "#", F.count), F.Column("kind", "kind"), F.Column("note", "note")])
    view = F.make_table(model, "fill-test")
    qtbot.addWidget(view)
    view.resize(800, 200)
    view.show()
    model.set_frame(pd.DataFrame({"n": [1, 2], "kind": ["marker", "range"], "note": ["layer 14 starts", "MLP"]}))
    header = view.horizontalHeader()
    qtbot.waitUntil(lambda: view.columnWidth(1) == max(view.sizeHintForColumn(1), header.sectionSizeHint(1)))
    qtbot.wait(20)
    assert header.length() == view.viewport().width()
    assert view.columnWidth(2) > 2 * view.sizeHintForColumn(2)
