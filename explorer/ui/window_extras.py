"""The main window's capture, theme, help and persistence additions, installed in one call
(`install(window)` from MainWindow.__init__) so main_window.py stays about the timeline:

- File > New capture... (Ctrl+N) and Re-run with changes... (Ctrl+Shift+R, pre-filled
  from the open trace's meta.json); a finished capture opens in the window.
- View > Theme > Dark / Light, remembered in the settings.
- Help > Keyboard shortcuts (F1) and About.
- Window geometry and dock layout saved on close and restored on the next start.
- Dock tabs show their whole titles ("Recommendations", not "Recommendati..."), with scroll
  arrows when a dock area holds more tabs than fit.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QMenu, QMessageBox, QTabBar, QWidget

from explorer.ui.settings import THEME, WindowPersistence
from explorer.ui.themes import DEFAULT_THEME, THEMES, apply_theme
from simcore.errors import UserError


def bring_to_front(widget: QWidget) -> None:
    widget.show()
    if QGuiApplication.platformName() != "offscreen":  # (offscreen prints a warning on raise)
        widget.raise_()
        widget.activateWindow()


def menu_titled(window: QMainWindow, title: str) -> QMenu:
    """The menu-bar menu whose title (without '&') is `title`, created when missing."""
    for action in window.menuBar().actions():
        if action.menu() is not None and action.text().replace("&", "") == title:
            return action.menu()
    return window.menuBar().addMenu(f"&{title}")


class WindowExtras(QObject):
    """Owns the dialogs and actions it adds to one MainWindow."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.store = window.recent.store
        self.persistence = WindowPersistence(window, self.store)
        self.capture_dialog = None
        self.shortcuts_window = None
        self.about_dialog = None
        window.installEventFilter(self)

        file_menu = menu_titled(window, "File")
        first = file_menu.actions()[0] if file_menu.actions() else None
        self.new_capture_action = QAction("&New capture\u2026", window, shortcut=QKeySequence.New)
        self.new_capture_action.setObjectName("action-new-capture")
        self.new_capture_action.triggered.connect(lambda: self.new_capture())
        self.rerun_action = QAction("Re-run with &changes\u2026", window, shortcut=QKeySequence("Ctrl+Shift+R"))
        self.rerun_action.setObjectName("action-rerun")
        self.rerun_action.setToolTip("A new capture pre-filled with the options of the open trace")
        self.rerun_action.triggered.connect(self.rerun)
        file_menu.insertActions(first, [self.new_capture_action, self.rerun_action])
        file_menu.insertSeparator(first)
        file_menu.aboutToShow.connect(lambda: self.rerun_action.setEnabled(window.loaded is not None))

        view_menu = getattr(window, "view_menu", None) or menu_titled(window, "View")
        theme_menu = QMenu("&Theme", view_menu)
        theme_menu.setObjectName("menu-theme")
        view_menu.insertMenu(view_menu.actions()[0] if view_menu.actions() else None, theme_menu)
        self.theme_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        for name in THEMES:
            act = theme_menu.addAction(name.capitalize())
            act.setObjectName(f"action-theme-{name}")
            act.setCheckable(True)
            act.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            group.addAction(act)
            self.theme_actions[name] = act

        help_menu = menu_titled(window, "Help")
        shortcuts = help_menu.addAction("&Keyboard shortcuts", self.show_shortcuts)
        shortcuts.setObjectName("action-shortcuts")
        shortcuts.setShortcut(QKeySequence.HelpContents)
        about = help_menu.addAction("&About Trn3 Explorer", self.show_about)
        about.setObjectName("action-about")
        about.setMenuRole(QAction.AboutRole)

        saved = self.store.value(THEME, DEFAULT_THEME)
        self.set_theme(saved if saved in THEMES else DEFAULT_THEME, save=False)

    # -- capture -----------------------------------------------------------------------
    def _default_directory(self) -> Path:
        if self.window.loaded is not None:
            return Path(self.window.loaded.path).resolve().parent
        for p in self.window.recent.paths():
            if Path(p).parent.is_dir():
                return Path(p).parent
        return Path.cwd()

    def new_capture(self, initial: dict | None = None):
        """Open the capture dialog (pre-filled with `initial`); its trace opens here when written."""
        from explorer.ui.capture_dialog import CaptureDialog

        if self.capture_dialog is not None and self.capture_dialog.running:
            bring_to_front(self.capture_dialog)
            return self.capture_dialog
        if self.capture_dialog is not None:
            self.capture_dialog.deleteLater()
        dialog = self.capture_dialog = CaptureDialog(self.window, initial=initial, directory=self._default_directory())
        dialog.captured.connect(self.window.open_path)
        bring_to_front(dialog)
        return dialog

    def rerun(self):
        """A capture dialog pre-filled from the open trace's meta (change a value, Run)."""
        from explorer.ui.capture_options import options_from_meta

        loaded = self.window.loaded
        try:
            if loaded is None:
                raise UserError("open a captured trace first; Re-run with changes starts from its capture options.")
            options = options_from_meta(loaded.index.trace.meta)
        except UserError as exc:
            QMessageBox.warning(self.window, "Re-run with changes", str(exc))
            return None
        dialog = self.new_capture(options)
        dialog.setWindowTitle(f"Re-run {Path(loaded.path).name} with changes")
        return dialog

    # -- theme and help ------------------------------------------------------------------
    def set_theme(self, name: str, save: bool = True) -> None:
        apply_theme(name)
        self.theme_actions[name].setChecked(True)
        if save:
            self.store.setValue(THEME, name)
            self.store.sync()

    def show_shortcuts(self):
        from explorer.ui.shortcuts_window import ShortcutsWindow

        if self.shortcuts_window is None:
            self.shortcuts_window = ShortcutsWindow(self.window)
        bring_to_front(self.shortcuts_window)
        return self.shortcuts_window

    def show_about(self):
        from explorer.ui.about import AboutDialog

        if self.about_dialog is None:
            self.about_dialog = AboutDialog(self.window)
        bring_to_front(self.about_dialog)
        return self.about_dialog

    # -- closing -------------------------------------------------------------------------
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if obj is self.window and event.type() == QEvent.ChildPolished and isinstance(event.child(), QTabBar):
            whole_titles(event.child())  # a tab bar Qt made for tabbed docks
        if obj is self.window and event.type() == QEvent.Close:
            dialog = self.capture_dialog
            if dialog is not None and dialog.running:  # do not leave a half-written trace or a live thread
                dialog.cancel()
                dialog.wait()
        return False


def whole_titles(bar: QTabBar) -> None:
    """Dock tabs with their whole titles, scrolling when they do not fit (Qt elides them by default)."""
    bar.setElideMode(Qt.ElideNone)
    bar.setUsesScrollButtons(True)


def install(window: QMainWindow) -> WindowExtras:
    extras = WindowExtras(window)
    for bar in window.findChildren(QTabBar):
        whole_titles(bar)
    return extras
