"""Help > About: what this is and the versions of everything a bug report needs."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    """Component -> version, in the order the About box lists them."""
    import numpy
    import pyarrow
    import PySide6
    import pyqtgraph

    import explorer
    import simcore
    from simcore.trace import FORMAT_VERSION

    try:
        import numba

        numba_version = numba.__version__
    except ImportError:  # simcore falls back to pure Python
        numba_version = "not installed"
    return {
        "Trn3 Explorer": explorer.__version__,
        "simcore (simulator)": simcore.__version__,
        "trace format": FORMAT_VERSION,
        "Python": f"{platform.python_version()} ({platform.python_implementation()})",
        "Qt": qVersion(),
        "PySide6": PySide6.__version__,
        "pyqtgraph": pyqtgraph.__version__,
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "numba": numba_version,
        "click": _dist_version("click"),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}"
        + (" (packaged)" if getattr(sys, "frozen", False) else ""),
    }


class AboutDialog(QDialog):
    """The About box: a sentence about the app and a table of versions (selectable, to paste in a bug report)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("about-dialog")
        self.setWindowTitle("About Trn3 Explorer")
        self.versions = versions()
        intro = QLabel(
            f"<h2>Trn3 Explorer {self.versions['Trn3 Explorer']}</h2>"
            "<p>A Trainium3 execution simulator, a desktop timeline explorer and the <tt>trnx</tt> CLI. "
            "Traces are simulated, not measured on hardware.</p>", wordWrap=True)
        self.table = QTableWidget(len(self.versions), 2, objectName="about-versions")
        self.table.setHorizontalHeaderLabels(["component", "version"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        for i, (name, version) in enumerate(self.versions.items()):
            for j, text in enumerate((name, version)):
                item = QTableWidgetItem(text)
                item.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(self.table, 1)
        lay.addWidget(buttons)
        self.resize(460, 460)

    def text(self) -> str:
        """The versions as plain lines ('name: version')."""
        return "\n".join(f"{k}: {v}" for k, v in self.versions.items())
