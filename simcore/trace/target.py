"""Where a trace is written: what may be replaced, and the final move that replaces nothing else.

`--overwrite` replaces only a trace this tool wrote: a directory whose meta.json says
`"format": "trnx-trace"` and that holds nothing but that meta.json, the table files it lists
and the tool's own disposable files (`schema.DISPOSABLE_FILES`). A file, a symlink, any other
directory, or a trace holding anything else (a user's notes or annotations) is refused with
one sentence and never touched.

The final step (`install`) checks and moves in single renames, so whatever appears at the
target while a trace is being written is never replaced: the old trace is first renamed aside
(`.NAME.trnx-old-*`), checked again there (put back if it is not ours after all), the new
trace is renamed in with a rename that fails if anything is at the target, and only then are
the old trace's own files removed. Of two writers to one path without --overwrite, one wins
and the other fails with one sentence.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from simcore.errors import UserError
from simcore.tempfiles import OLD, _NAME, clean_stale, rename_noreplace, sibling
from simcore.trace import schema as S
from simcore.trace.schema import plain_relative

META_LIMIT_BYTES = 64 << 20
"""A meta.json larger than this is not read to decide whether a directory is a trace."""

_TAIL = "--overwrite replaces only a trace trnx wrote, so it was left alone"


def check_target(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Refuse, before any work, a trace output `path` that may not be written: its directory
    is missing, something is there and `overwrite` is off, or what is there is not a trace of
    ours."""
    path = Path(path)
    if not path.parent.is_dir():
        raise UserError(f"cannot write {path}: directory {path.parent} does not exist.")
    check_not_in_trace(path)
    if not os.path.lexists(path):
        return path
    if not overwrite:
        raise UserError(f"{path} already exists; choose another name or pass --overwrite.")
    why = not_ours(path)
    if why is not None:
        raise UserError(why)
    return path


def not_ours(path: Path, shown: Path | None = None) -> str | None:
    """Why `path` is not a trace this tool wrote (one sentence naming `shown`), or None if it is."""
    shown = path if shown is None else shown
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"{shown} is a symbolic link; {_TAIL} (remove the link yourself or choose another name)."
    if not stat.S_ISDIR(st.st_mode):
        return f"{shown} is a file, not a trace; {_TAIL} (move it away or choose another name)."
    meta = _meta(path)
    if isinstance(meta, str):
        return f"{shown} is not a trace trnx wrote ({meta}); {_TAIL} (move it away or choose another name)."
    foreign = _first_foreign(path, _owned_files(meta))
    if foreign is not None:
        return (f"{shown} holds {foreign}, which trnx did not write; {_TAIL} "
                f"(move {foreign} out of it, or choose another name).")
    return None


def _meta(path: Path) -> dict[str, Any] | str:
    """meta.json of a trace of ours, or why there is none."""
    meta_path = path / S.META_FILE
    try:
        st = os.lstat(meta_path)
    except FileNotFoundError:
        return f"it has no {S.META_FILE}"
    if not stat.S_ISREG(st.st_mode):
        return f"its {S.META_FILE} is not a plain file"
    if st.st_size > META_LIMIT_BYTES:
        return f"its {S.META_FILE} is larger than any trnx writes"
    try:
        meta = json.loads(meta_path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return f"its {S.META_FILE} cannot be read"
    if not isinstance(meta, dict) or meta.get("format") != S.FORMAT_NAME:
        return f"its {S.META_FILE} does not say format '{S.FORMAT_NAME}'"
    return meta


def _owned_files(meta: dict[str, Any]) -> set[str]:
    """The table files meta.json lists (plain relative `.arrow` names only)."""
    files: set[str] = set()
    tables = meta.get("tables")
    for entry in tables.values() if isinstance(tables, dict) else ():
        if not isinstance(entry, dict):
            continue
        names = [entry.get("file")]
        parts = entry.get("partitions")
        if isinstance(parts, list):
            names += [p.get("file") for p in parts if isinstance(p, dict)]
        files.update(n for n in names if plain_relative(n) and n.endswith(S.TABLE_SUFFIX))
    return files


def _disposable(name: str) -> bool:
    """One of the tool's disposable files, or a temporary one of them (a write that was cut short)."""
    if name in S.DISPOSABLE_FILES:
        return True
    m = _NAME.match(name)
    if m is not None:
        return m["name"] in S.DISPOSABLE_FILES
    # what earlier versions named a disposable file's temporary: `.NAME.tmp-PID-RAND`
    return any(name.startswith(f".{d}.tmp-") for d in S.DISPOSABLE_FILES)


def _first_foreign(root: Path, files: set[str]) -> str | None:
    """The first entry under `root` that is not meta.json, a listed table file (or a directory
    on the way to one) or a disposable file; symlinks and special files are never ours."""
    dirs = {str(PurePosixPath(f).parent) for f in files}
    dirs = {p for d in dirs for p in _ancestors(d)}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = sorted(os.scandir(root / rel) if rel else os.scandir(root), key=lambda e: e.name)
        except OSError:
            return rel or "."
        for e in entries:
            r = f"{rel}/{e.name}" if rel else e.name
            if e.is_symlink():
                return r
            if e.is_dir(follow_symlinks=False):
                if r not in dirs:
                    return r
                stack.append(r)
            elif e.is_file(follow_symlinks=False):
                if r == S.META_FILE or r in files or (not rel and _disposable(e.name)):
                    continue
                return r
            else:
                return r
    return None


def _ancestors(d: str) -> list[str]:
    parts = [] if d in ("", ".") else d.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def trace_containing(path: Path) -> Path | None:
    """The trace directory a file written at `path` would land in (its real parent directory or
    one above it holds a meta.json of this format), or None."""
    parent = Path(os.path.realpath(Path(path).parent))
    for d in (parent, *parent.parents):
        if os.path.isfile(d / S.META_FILE) and isinstance(_meta(d), dict):
            return d
    return None


def check_not_in_trace(path: Path) -> None:
    """Refuse a file written inside a trace directory (symlinks resolved): a trace holds only
    what its writer put there, plus the format's disposable files and the files the explorer
    keeps there for the user (annotations)."""
    trace = trace_containing(path)
    if trace is None:
        return
    if trace == Path(os.path.realpath(Path(path).parent)) and Path(path).name in S.DISPOSABLE_FILES + S.USER_FILES:
        return
    raise UserError(f"{path} is inside the trace {trace}; trnx never writes into a trace directory, "
                    "choose a path outside it.")


def clean_directory(directory: Path) -> None:
    """Before writing a trace into `directory`: remove the temporaries killed writers left there,
    and settle old traces a killed replace moved aside (simcore.tempfiles.clean_stale)."""
    clean_stale(directory, restore=settle_aside)


# -- the final move ------------------------------------------------------------------------
def install(tmp: Path, target: Path, overwrite: bool) -> None:
    """Move the finished trace `tmp` to `target` (see the module docstring). Raises UserError,
    leaving `tmp` for the caller to remove, when something that may not be replaced is there."""
    aside = None
    if overwrite and os.path.lexists(target):
        aside = sibling(target, OLD)
        try:
            rename_noreplace(target, aside)
        except FileNotFoundError:
            aside = None  # gone meanwhile: nothing to replace
        else:
            why = not_ours(aside, shown=target)
            if why is not None:
                _put_back(aside, target)
                raise UserError(why)
    try:
        rename_noreplace(tmp, target)
    except FileExistsError:
        if aside is not None:
            _discard(aside, target)  # ours, and replacing it was asked for; another writer won
        raise UserError(f"{target} appeared while this trace was being written; it was left alone and "
                        "this trace was not kept.") from None
    except BaseException:
        if aside is not None:
            _put_back(aside, target)
        raise
    if aside is not None:
        _discard(aside, target)


def _put_back(aside: Path, target: Path) -> None:
    """Return what was moved aside to its name; if that name is taken meanwhile, to a visible one."""
    try:
        rename_noreplace(aside, target)
    except FileExistsError:
        _make_visible(aside, target)


def _make_visible(aside: Path, target: Path) -> None:
    """Something not ours is at a hidden aside name and its own name is taken: give it a
    visible one beside it (`NAME.moved-aside-RAND`) so the user finds it."""
    try:
        rename_noreplace(aside, target.parent / f"{target.name}.moved-aside-{uuid.uuid4().hex[:8]}")
    except OSError:
        pass


def _discard(aside: Path, target: Path) -> None:
    """Remove an old trace of ours moved aside: only its own files, so anything that got into it
    meanwhile survives (under a visible name)."""
    if not remove_ours(aside):
        _make_visible(aside, target)


def remove_ours(path: Path) -> bool:
    """Unlink the files `not_ours` accepts (meta.json, listed tables, disposable files), then the
    directories they leave empty; True when nothing is left. Never follows a symlink."""
    meta = _meta(path)
    files = _owned_files(meta) if isinstance(meta, dict) else set()
    dirs: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(path, topdown=True, followlinks=False):
        here = Path(dirpath)
        rel = here.relative_to(path).as_posix()
        dirs.append(here)
        for name in filenames:
            r = name if rel == "." else f"{rel}/{name}"
            f = here / name
            if f.is_symlink() or not f.is_file():
                continue
            if r == S.META_FILE or r in files or (rel == "." and _disposable(name)):
                try:
                    f.unlink()
                except OSError:
                    pass
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass
    return not os.path.lexists(path)


def settle_aside(aside: Path, target: Path) -> None:
    """A stale `.NAME.trnx-old-*` (its replace was killed): back to its name if that is free,
    else removed if it is a trace of ours, else shown under a visible name."""
    try:
        rename_noreplace(aside, target)
        return
    except FileExistsError:
        pass
    if not_ours(aside) is None:
        _discard(aside, target)
    else:
        _make_visible(aside, target)
