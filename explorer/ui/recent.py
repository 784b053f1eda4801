"""The recent-files list, kept in the user's settings (QSettings, ini format)."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QSettings

MAX_RECENT = 10
KEY = "recent_traces"


def settings() -> QSettings:
    return QSettings(QSettings.IniFormat, QSettings.UserScope, "trn3-explorer", "explorer")


class RecentFiles:
    def __init__(self, store: QSettings | None = None) -> None:
        self.store = store or settings()

    def paths(self) -> list[str]:
        value = self.store.value(KEY, [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def add(self, path: str | Path) -> None:
        """Put `path` first; a trace imported from a Neuron profile is remembered as the profile."""
        # only a process that imported a profile has its importer loaded (importing it just to ask cost
        # 0.1-0.3 s of the GUI thread at each open, before the first frame)
        imported = sys.modules.get("explorer.interop.neuron_profile.as_trace")
        p = (imported.source_of(path) if imported is not None else None) or str(Path(path).resolve())
        items = [x for x in self.paths() if x != p]
        self.store.setValue(KEY, [p, *items][:MAX_RECENT])
        self.store.sync()

    def remove(self, path: str) -> None:
        self.store.setValue(KEY, [x for x in self.paths() if x != path])
        self.store.sync()
