"""Benches that open the window keep out of the user's settings file.

The window remembers recent files and its dock layout in $XDG_CONFIG_HOME/trn3-explorer/explorer.ini
(explorer/ui/recent.py). A bench opening scratch copies of big captures filled the user's recent
files with /tmp paths; `use_private_settings()` points XDG_CONFIG_HOME at a fresh directory, removed
at exit, before Qt reads it. `trnx view` subprocesses the bench starts inherit it, and every run starts
from the default layout, so runs measure the same window.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def use_private_settings() -> str:
    """Point this process and its children at a private settings directory; returns it."""
    home = tempfile.mkdtemp(prefix="trnx-bench-settings-")
    atexit.register(shutil.rmtree, home, True)
    os.environ["XDG_CONFIG_HOME"] = home
    return home
