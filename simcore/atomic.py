"""Write files so that a failure never leaves a half-written file at the target, and so that
nothing the tool did not write is replaced (docs/trace-format.md, "File safety")."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simcore.errors import UserError
from simcore.tempfiles import clean_stale, rename_noreplace, sibling


@contextmanager
def atomic_path(target: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling of `target`; rename it onto `target` on success.

    On any exception (including Ctrl-C) the temporary file is removed and the
    target is left as it was. The temporary has the tool's recognisable name
    (simcore.tempfiles), so one a killed process left is removed by a later write here.
    Refused with one sentence: a target inside a trace directory (except the format's
    disposable files), a directory, a symlink or a special file at the target, and any
    existing file without `overwrite`. Without `overwrite` the final rename never replaces
    what appeared meanwhile; with it, only a plain file is replaced.
    """
    target = check_output(target, overwrite)
    clean_stale(target.parent)
    tmp = sibling(target)
    try:
        try:
            yield tmp
        except OSError as exc:
            raise naming_target(exc, tmp, target) from exc
        if overwrite:
            _check_existing(target, overwrite, meanwhile=True)
            try:
                os.replace(tmp, target)
            except (IsADirectoryError, NotADirectoryError):
                raise UserError(f"{target} appeared while it was being written and is not a file; it was left "
                                "alone and nothing was written.") from None
        else:
            try:
                rename_noreplace(tmp, target)
            except FileExistsError:
                raise UserError(f"{target} appeared while it was being written; it was left alone and nothing "
                                "was written.") from None
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def check_output(target: str | os.PathLike[str], overwrite: bool) -> Path:
    """The checks `atomic_path` makes before writing, for a command to make before any work."""
    from simcore.trace.target import check_not_in_trace

    target = Path(target)
    if not target.parent.is_dir():
        raise UserError(f"cannot write {target}: directory {target.parent} does not exist.")
    check_not_in_trace(target)
    _check_existing(target, overwrite)
    return target


def _check_existing(target: Path, overwrite: bool, meanwhile: bool = False) -> None:
    """What is at `target` now may be replaced: nothing, or (with `overwrite`) a plain file."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    when = " (it appeared while the output was being written)" if meanwhile else ""
    if stat.S_ISDIR(mode):
        raise UserError(f"cannot write {target}: it is a directory{when}.")
    if stat.S_ISLNK(mode):
        raise UserError(f"{target} is a symbolic link{when}; it was left alone, choose another name.")
    if not stat.S_ISREG(mode):
        raise UserError(f"{target} is not a plain file{when}; it was left alone, choose another name.")
    if not overwrite:
        raise UserError(f"{target} already exists; choose another name or pass --overwrite.")


def naming_target(exc: OSError, tmp: Path, target: Path) -> OSError:
    """`exc` naming the user's `target` instead of the hidden temporary written first (a user
    who asked for /sys/x.csv should not read about /sys/.x.csv.trnx-tmp-...); others unchanged.
    Arrow's errors carry the path and errno only in their text."""
    hidden = str(tmp)
    if exc.filename != hidden and hidden not in str(exc):
        return exc
    code = exc.errno
    if code is None:
        found = re.search(r"\[errno (\d+)\]", str(exc), re.I)
        code = int(found.group(1)) if found else None
    if code is None:
        return OSError(f"cannot write {target}: {str(exc).replace(hidden, str(target))}")
    return OSError(code, os.strerror(code), str(target))
