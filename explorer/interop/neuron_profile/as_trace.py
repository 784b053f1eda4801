"""Let every command that opens a trace open a Neuron Explorer profile directory too.

`trace_path(path)` returns `path` for a trnx trace, and for a profile directory (or a
directory of them) the path of a trace imported into a private temporary directory that is
removed when the process exits: `trnx view/summary/diff PROFILE_DIR` work without an
explicit `trnx import`, and nothing is written next to the user's profile. The window's
loader opens a profile directory the same way (File > Open, a drop, Open recent), and
`source_of` names the directory an imported trace came from, so the recent-files list keeps
the profile, not the temporary trace that is gone after the process exits.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from explorer.interop.neuron_profile.importer import import_neuron_profile
from explorer.interop.neuron_profile.reader import looks_like_profile
from simcore.trace.schema import META_FILE

_SOURCES: dict[str, str] = {}  # imported trace -> the profile directory it was imported from


def trace_path(path: str) -> str:
    p = Path(path)
    if not p.is_dir() or (p / META_FILE).exists() or not looks_like_profile(p):
        return path
    tmp = Path(tempfile.mkdtemp(prefix="trnx-profile-"))
    atexit.register(shutil.rmtree, tmp, True)
    out = tmp / f"{p.resolve().name}.trnx"
    import_neuron_profile([p], out)
    _SOURCES[str(out.resolve())] = str(p.resolve())
    return str(out)


def source_of(path: str | Path) -> str | None:
    """The profile directory `path` was imported from by `trace_path` in this process, else None."""
    return _SOURCES.get(str(Path(path).resolve()))
