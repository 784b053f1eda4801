"""Keep a test run out of the user's settings file.

Qt's QSettings (ini format, user scope; explorer/ui/recent.py) keeps recent files and window
state in $XDG_CONFIG_HOME/trn3-explorer/explorer.ini, ~/.config when unset. `isolate()` points
XDG_CONFIG_HOME at a private directory before any test imports Qt (QSettings reads it once per
process); the CLI and explorer subprocesses tests start inherit it, and so do pytest-xdist's
workers, which share the directory of the run that started them (passed on in the environment).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_OURS, _REAL = "TRNX_TESTS_CONFIG_HOME", "TRNX_TESTS_REAL_CONFIG_HOME"
_inherited = _OURS in os.environ
_real_home = os.environ[_REAL] if _inherited else os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
CONFIG_HOME = Path(os.environ[_OURS] if _inherited else tempfile.mkdtemp(prefix="trnx-test-config-"))
REAL_SETTINGS = Path(_real_home) / "trn3-explorer" / "explorer.ini"
PRIVATE_SETTINGS = CONFIG_HOME / "trn3-explorer" / "explorer.ini"


def isolate() -> None:
    os.environ.update({"XDG_CONFIG_HOME": str(CONFIG_HOME), _OURS: str(CONFIG_HOME), _REAL: _real_home})
    if not _inherited:  # the run that made the directory removes it
        atexit.register(shutil.rmtree, CONFIG_HOME, True)


def lines_naming(settings: Path, basetemp: Path) -> list[str]:
    """Lines of `settings` naming a path under `basetemp` (a run's temporary files)."""
    if not settings.is_file():
        return []
    return sorted({line for line in settings.read_text(errors="replace").splitlines() if str(basetemp) in line})
