"""The tool's own temporaries: recognisable names, a rename that never replaces, and cleanup
of what a killed process left behind.

Every file or directory the tool writes first goes to a hidden sibling named
`.NAME.trnx-tmp-PID-HOSTRAND` (an old trace being replaced is moved aside as
`.NAME.trnx-old-PID-HOSTRAND`): PID is the writing process, HOST 8 hex digits of a hash of
the machine's name, RAND 8 random hex digits. A name of that shape whose process is gone
from this machine is a leftover of a kill; `clean_stale(directory)` removes those (and puts
an interrupted replace's old trace back) before each write into that directory. Nothing
else is ever removed: a name the tool did not make, another machine's temporary (a shared
file system) or a live process's is left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import os
import re
import shutil
import socket
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

TMP, OLD = "tmp", "old"
_NAME = re.compile(r"^\.(?P<name>.+)\.trnx-(?P<kind>tmp|old)-(?P<pid>\d{1,10})-(?P<host>[0-9a-f]{8})[0-9a-f]{8}$")
# What earlier versions left: `.NAME.tmp-PID-RAND` (a writer's temporary) and `.NAME.old-RAND`
# (a trace moved aside by an interrupted --overwrite). They carry no machine name.
_LEGACY_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d{1,10})-[0-9a-f]{8}$")
_LEGACY_OLD = re.compile(r"^\.(?P<name>.+)\.old-[0-9a-f]{8}$")
LEGACY_OLD_AGE_S = 600.0
"""A legacy `.NAME.old-*` has no owner to ask: it is taken for a leftover once it is this old."""


def host_tag() -> str:
    """8 hex digits naming this machine in temporary names (a PID means nothing elsewhere)."""
    return hashlib.blake2b(socket.gethostname().encode("utf-8", "replace"), digest_size=4).hexdigest()


def sibling(target: str | os.PathLike[str], kind: str = TMP) -> Path:
    """A fresh hidden name beside `target` for this process's temporary (`kind` tmp) or for an
    old trace moved aside (`kind` old)."""
    target = Path(target)
    return target.parent / f".{target.name}.trnx-{kind}-{os.getpid()}-{host_tag()}{uuid.uuid4().hex[:8]}"


def is_temporary_name(name: str) -> bool:
    """Is `name` one of the tool's temporary names (this version's or an earlier one's)?"""
    return bool(_NAME.match(name) or _LEGACY_TMP.match(name) or _LEGACY_OLD.match(name))


def alive(pid: int) -> bool:
    """Is process `pid` running on this machine (someone else's counts as running)?"""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


# -- a rename that never replaces ---------------------------------------------------------
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_renameat2: Callable[..., int] | None | bool = False  # False: not looked up yet


def _libc_renameat2() -> Callable[..., int] | None:
    global _renameat2
    if _renameat2 is False:
        _renameat2 = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
                fn = libc.renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _renameat2 = fn
            except (OSError, AttributeError):
                _renameat2 = None
    return _renameat2  # type: ignore[return-value]


def rename_noreplace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename `src` to `dst`, raising FileExistsError if anything is at `dst` -- checked and moved
    in one step (Linux renameat2 RENAME_NOREPLACE). Elsewhere, or on a file system without it,
    `dst` is checked just before a plain rename, which itself refuses a file or a non-empty
    directory there: the one thing a race could still replace is an empty directory."""
    s, d = os.fsencode(src), os.fsencode(dst)
    fn = _libc_renameat2()
    if fn is not None:
        if fn(_AT_FDCWD, s, _AT_FDCWD, d, _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), os.fsdecode(src), None, os.fsdecode(dst))
    if os.path.lexists(d):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fsdecode(src), None, os.fsdecode(dst))
    if os.path.isdir(s) and not os.path.islink(s):
        try:
            os.rename(s, d)  # onto a file or a non-empty directory this fails
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fsdecode(src), None,
                                      os.fsdecode(dst)) from None
            raise
    else:
        os.link(s, d)    # fails if anything appeared at dst meanwhile
        os.unlink(s)


# -- cleaning up after killed processes -----------------------------------------------------
def remove_tree(path: Path) -> None:
    """Remove a temporary of ours: a directory tree (symlinks inside unlinked, never followed)
    or a file."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def clean_stale(directory: str | os.PathLike[str],
                restore: Callable[[Path, Path], None] | None = None) -> list[Path]:
    """Remove the temporaries in `directory` whose writer is gone (see the module docstring);
    returns what was cleaned. What a replace that never finished moved aside is settled by
    `restore(aside, target)` (simcore.trace.target: back to its name when that is free, else
    removed if it is a trace of ours); without `restore` it is left for the next trace write.
    Never raises."""
    directory = Path(directory)
    cleaned: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return cleaned
    here = host_tag()
    for entry in entries:
        path = Path(entry.path)
        try:
            m = _NAME.match(entry.name)
            if m is not None:
                if m["host"] != here or alive(int(m["pid"])):
                    continue
                kind, name = m["kind"], m["name"]
            elif (m := _LEGACY_TMP.match(entry.name)) is not None:
                if alive(int(m["pid"])):
                    continue
                kind, name = TMP, m["name"]
            elif (m := _LEGACY_OLD.match(entry.name)) is not None:
                if time.time() - entry.stat(follow_symlinks=False).st_ctime < LEGACY_OLD_AGE_S:
                    continue
                kind, name = OLD, m["name"]
            else:
                continue
            if kind == OLD:
                if restore is None:
                    continue  # only a trace write knows how to settle an old trace moved aside
                restore(path, directory / name)
            else:
                remove_tree(path)
            if not os.path.lexists(path):
                cleaned.append(path)
        except OSError:
            continue
    return cleaned
