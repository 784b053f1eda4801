"""Write files so that a failure never leaves a half-written file at the target."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simcore.errors import UserError
from simcore.tempfiles import clean_stale, sibling


@contextmanager
def atomic_path(target: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling of `target`; rename it onto `target` on success.

    On any exception (including Ctrl-C) the temporary file is removed and the
    target is left as it was. The temporary has the tool's recognisable name
    (simcore.tempfiles), so one a killed process left is removed by a later write here.
    """
    target = Path(target)
    if target.is_dir():
        raise UserError(f"cannot write {target}: it is a directory.")
    if target.exists() and not overwrite:
        raise UserError(f"{target} already exists; choose another name.")
    if not target.parent.is_dir():
        raise UserError(f"cannot write {target}: directory {target.parent} does not exist.")
    clean_stale(target.parent)
    tmp = sibling(target)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
