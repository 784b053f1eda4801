"""File > Export: the operator table, the selection and the summary to CSV; the view to PNG.

CSV goes through `explorer.model.analysis.export_tables` (atomic: a temporary sibling renamed
onto the target); PNG is `QWidget.grab()` saved to a temporary sibling and renamed
the same way (`simcore.atomic.atomic_path`), so a failed export never leaves a
half-written file. Failures show an error dialog; the window stays up.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from explorer.model.analysis.export_tables import area_events, write_csv, write_operator_table, write_summary
from explorer.model.timeline.selection import is_area
from simcore.atomic import atomic_path
from simcore.errors import UserError, describe, user_caused


def save_png(widget: QWidget, path: str | os.PathLike[str], overwrite: bool = True) -> Path:
    """A picture of `widget` as it is on screen, written atomically; without `overwrite` a file that
    appeared at `path` meanwhile is left alone (`trnx view --screenshot` without --overwrite)."""
    path = Path(path)
    pixmap = widget.grab()
    if pixmap.isNull():
        raise UserError(f"cannot export {path.name}: the view has nothing to draw yet.")
    with atomic_path(path, overwrite=overwrite) as tmp:
        if not pixmap.save(str(tmp), "PNG"):
            raise UserError(f"cannot write {path}: saving the PNG failed (disk full or not writable?).")
    return path


class AnalysisExport:
    """The export actions of one window (`panels`: its `AnalysisPanels`)."""

    def __init__(self, panels) -> None:
        self.panels = panels
        self.window = panels.window
        self.last_path: Path | None = None

    def build_menu(self, menu: QMenu) -> None:
        menu.setObjectName("menu-export")
        for text, name, slot, tip in (
            ("Operator table as CSV\u2026", "action-export-operators", self.export_operators,
             "Every op and kernel row of the operator tree (only the rows the filter shows, when one is set)."),
            ("Selection as CSV\u2026", "action-export-selection", self.export_selection,
             "The events of the timeline's area selection (Shift+drag), else the rows selected in the operator tree."),
            ("Summary as CSV\u2026", "action-export-summary", self.export_summary,
             "One row per summary metric of the whole trace, as `trnx summary --json` has them."),
            ("Timeline as PNG\u2026", "action-export-timeline-png", lambda: self.export_png(self.window.timeline),
             "A picture of the timeline as it is on screen."),
            ("Window as PNG\u2026", "action-export-window-png", lambda: self.export_png(self.window),
             "A picture of the whole window, panels included."),
        ):
            act = menu.addAction(text, slot)
            act.setObjectName(name)
            act.setToolTip(tip)
            act.setStatusTip(tip)
        menu.setToolTipsVisible(True)

    # -- asking for a file -----------------------------------------------------------
    def _ask(self, title: str, suggested: str, filt: str) -> Path | None:
        base = self.window.loaded.path.parent if self.window.loaded is not None else Path.cwd()
        path, _ = QFileDialog.getSaveFileName(self.window, title, str(base / suggested), filt)
        return Path(path) if path else None

    def _stem(self) -> str:
        loaded = self.window.loaded
        return Path(loaded.path).name.removesuffix(".trnx") if loaded is not None else "trace"

    def _run(self, fn) -> Path | None:
        try:
            out = fn()
        except UserError as exc:
            self._error(str(exc))
            return None
        except OSError as exc:
            self._error(f"cannot write the file: {exc.strerror or exc}.")
            return None
        except Exception as exc:  # one sentence; a bug also keeps its traceback on stderr
            if not user_caused(exc):
                traceback.print_exc(file=sys.stderr)
            self._error(describe(exc, "export it"))
            return None
        if out is not None:
            self.last_path = out
            self.window.statusBar().showMessage(f"wrote {out}", 6000)
        return out

    def _error(self, message: str) -> None:
        if getattr(self.window, "show_error_dialogs", True):
            QMessageBox.critical(self.window, "Export failed", message)
        else:
            self.window.statusBar().showMessage(f"export failed: {message}", 8000)

    def _need_analysis(self):
        a = self.panels.session.analysis
        if a is None:
            raise UserError("open a trace first (and wait for its analysis to finish).")
        return a

    # -- actions ---------------------------------------------------------------------
    def export_operators(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        def go():
            a = self._need_analysis()
            target = Path(path) if path else self._ask("Export the operator table", f"{self._stem()}-operators.csv",
                                                       "CSV (*.csv)")
            if target is None:
                return None
            model = self.panels.operators.model
            if model.shown is not None:  # what the filter shows
                rows = a.hierarchy.rows()
                return write_csv(rows[rows["node"].isin(model.shown)], target)
            return write_operator_table(a.hierarchy, target)
        return self._run(go)

    def export_selection(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        def go():
            a = self._need_analysis()
            area = self.window.view.area
            nodes = self.panels.operators.selected_nodes()
            if not is_area(area) and not nodes:
                raise UserError("nothing is selected: Shift+drag an area on the timeline or select rows in the "
                                "operator table first.")
            target = Path(path) if path else self._ask("Export the selection", f"{self._stem()}-selection.csv",
                                                       "CSV (*.csv)")
            if target is None:
                return None
            if is_area(area):
                return write_csv(area_events(a.trace, area.track_ids, int(area.t0), int(area.t1)), target)
            return write_csv(self.panels.operators.model.rows_for(nodes), target)
        return self._run(go)

    def export_summary(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        def go():
            a = self._need_analysis()
            target = Path(path) if path else self._ask("Export the summary", f"{self._stem()}-summary.csv",
                                                       "CSV (*.csv)")
            return None if target is None else write_summary(a.summary, target)
        return self._run(go)

    def export_png(self, widget: QWidget, path: str | os.PathLike[str] | None = None) -> Path | None:
        def go():
            name = "timeline" if widget is self.window.timeline else "window"
            target = Path(path) if path else self._ask("Export a picture", f"{self._stem()}-{name}.png",
                                                       "PNG image (*.png)")
            return None if target is None else save_png(widget, target)
        return self._run(go)
