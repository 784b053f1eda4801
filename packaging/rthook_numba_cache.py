"""PyInstaller runtime hook: give numba a writable cache directory in the packaged app.

simcore's scheduler is compiled with numba `cache=True`. In a source checkout numba
caches next to the .py files; inside the app bundle that directory may be read-only
(macOS app bundles, Program Files, a root-owned /opt install), so unless the user set
NUMBA_CACHE_DIR we point it at the per-user cache directory of the platform. Compiled
code then survives restarts and the first capture of a session skips the compile.
"""

import os
import sys
import tempfile


def _user_cache_root() -> str:
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches")
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-", delete=True)
        probe.close()
        return True
    except OSError:
        return False


if not os.environ.get("NUMBA_CACHE_DIR"):
    for candidate in (os.path.join(_user_cache_root(), "trn3-explorer", "numba"),
                      os.path.join(tempfile.gettempdir(), f"trn3-explorer-numba-{os.getuid() if hasattr(os, 'getuid') else 'user'}")):
        if _writable(candidate):
            os.environ["NUMBA_CACHE_DIR"] = candidate
            break
