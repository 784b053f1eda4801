"""Annotations: point markers and ranges with notes, kept in the trace directory as `annotations.json`.

The file is the user's own work beside the tables (which are never rewritten): a
versioned JSON document written atomically (a temporary sibling renamed onto it), so
a crash never leaves half a file, and `trnx export --format chrome-json|perfetto`
carries the annotations along. Every change is made to the file as it is on disk at that moment
(read again under a lock on the trace directory, where the platform has one), so two windows
annotating one trace keep each other's annotations, and a file that became unreadable is left
as it is. Markers snap to the nearest event edge on their row;
between two markers the window shows the time and what happened in between
(`explorer.model.timeline.selection.summarize_area` over every row).

    {"format": "trnx-annotations", "version": 1,
     "annotations": [{"id": 1, "kind": "marker", "t0": 1200, "t1": 1200, "track_id": 3, "note": "..."},
                     {"id": 2, "kind": "range", "t0": 1000, "t1": 5000, "track_id": null, "note": "..."}]}
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.trace.schema import ANNOTATIONS_FILE

FILE = ANNOTATIONS_FILE  # simcore.trace.schema: one of the files the tool may write into a trace directory
FORMAT = "trnx-annotations"
VERSION = 1
KINDS = ("marker", "range")


@dataclass(frozen=True)
class Annotation:
    id: int
    kind: str  # "marker" (t0 == t1) or "range"
    t0: int  # trace ns
    t1: int
    note: str = ""
    track_id: int | None = None  # the row it was made on, if any

    @property
    def duration_ns(self) -> int:
        return self.t1 - self.t0


def path_of(trace_dir: str | os.PathLike[str]) -> Path:
    return Path(trace_dir) / FILE


def _check(item: object, where: Path) -> Annotation:
    if not isinstance(item, dict):
        raise UserError(f"{where} is damaged: an annotation is not an object.")
    try:
        a = Annotation(int(item["id"]), str(item["kind"]), int(item["t0"]), int(item["t1"]), str(item.get("note", "")),
                       None if item.get("track_id") is None else int(item["track_id"]))
    except (KeyError, TypeError, ValueError):
        raise UserError(f"{where} is damaged: an annotation lacks an id, kind, t0 or t1.") from None
    if a.kind not in KINDS or a.t1 < a.t0 or (a.kind == "marker" and a.t1 != a.t0):
        raise UserError(f"{where} is damaged: annotation {a.id} is not a marker or a forward range.")
    return a


def load(trace_dir: str | os.PathLike[str]) -> list[Annotation]:
    """The trace's annotations ([] when it has none); a damaged or newer file is one sentence."""
    p = path_of(trace_dir)
    if not p.is_file():
        return []
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError(f"{p} is damaged (it is not JSON): it is left as it is; move it aside to annotate afresh.") from None
    except OSError as exc:
        raise UserError(f"{p} cannot be read ({exc.strerror or type(exc).__name__}); move it aside to annotate afresh.") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UserError(f"{p} is not a trnx annotations file.")
    if not isinstance(doc.get("version"), int) or doc["version"] > VERSION:
        raise UserError(f"{p} is annotations version {doc.get('version')!r}, newer than this explorer ({VERSION}); upgrade it.")
    items = doc.get("annotations")
    if not isinstance(items, list):
        raise UserError(f"{p} is damaged: it has no annotations list.")
    return sorted((_check(i, p) for i in items), key=lambda a: (a.t0, a.id))


def save(trace_dir: str | os.PathLike[str], annotations: list[Annotation]) -> Path:
    """Write the annotations atomically (temporary sibling + rename); [] removes the file."""
    p = path_of(trace_dir)
    if not annotations:
        if p.exists():
            p.unlink()
        return p
    doc = {"format": FORMAT, "version": VERSION,
           "annotations": [asdict(a) for a in sorted(annotations, key=lambda a: (a.t0, a.id))]}
    try:
        with atomic_path(p) as tmp:
            tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    except PermissionError:
        raise UserError(f"cannot save annotations: {p.parent} is read-only.") from None
    return p


@contextmanager
def _locked(trace_dir: Path) -> Iterator[None]:
    """Hold an advisory lock on the trace directory itself (no file is made for it), so two processes
    changing one trace's annotations take turns; where there is no flock (Windows), no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    try:
        fd = os.open(trace_dir, os.O_RDONLY)
    except OSError:  # (the directory went away: the read below says so)
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


class AnnotationSet:
    """A trace's annotations in memory, saved on every change. A change is applied to the file as it
    is now, not to the list read when the trace was opened: another window's annotations made since
    are kept (and shown), and one that is gone is one sentence."""

    def __init__(self, trace_dir: str | os.PathLike[str]) -> None:
        self.trace_dir = Path(trace_dir)
        self.items: list[Annotation] = load(self.trace_dir)

    def reload(self) -> list[Annotation]:
        """The annotations as the file has them now (another window may have changed it)."""
        self.items = load(self.trace_dir)
        return self.items

    def _change(self, fn: Callable[[list[Annotation], int], tuple[list[Annotation], Annotation | None]]
                ) -> Annotation | None:
        """`fn(current items, next free id)` -> (new items, the annotation it made or changed), applied
        to the file as it is now and saved before memory changes (a refused write changes nothing)."""
        with _locked(self.trace_dir):
            current = load(self.trace_dir)
            items, made = fn(current, max((a.id for a in current), default=0) + 1)
            save(self.trace_dir, items)
        self.items = sorted(items, key=lambda a: (a.t0, a.id))
        return made

    def add_marker(self, t: int, note: str = "", track_id: int | None = None) -> Annotation:
        def add(items: list[Annotation], ident: int):
            a = Annotation(ident, "marker", int(t), int(t), note, track_id)
            return items + [a], a

        return self._change(add)

    def add_range(self, t0: int, t1: int, note: str = "", track_id: int | None = None) -> Annotation:
        if t1 <= t0:
            raise UserError("a range annotation needs an end after its start.")

        def add(items: list[Annotation], ident: int):
            a = Annotation(ident, "range", int(t0), int(t1), note, track_id)
            return items + [a], a

        return self._change(add)

    def set_note(self, ident: int, note: str) -> Annotation:
        def edit(items: list[Annotation], _):
            a = replace(_find(items, ident), note=note)
            return [a if x.id == ident else x for x in items], a

        return self._change(edit)

    def remove(self, ident: int) -> None:
        def drop(items: list[Annotation], _):
            _find(items, ident)
            return [x for x in items if x.id != ident], None

        self._change(drop)

    def get(self, ident: int) -> Annotation:
        return _find(self.items, ident)

    def markers(self) -> list[Annotation]:
        return [a for a in self.items if a.kind == "marker"]


def _find(items: list[Annotation], ident: int) -> Annotation:
    for a in items:
        if a.id == ident:
            return a
    raise UserError(f"there is no annotation {ident} (another window may have removed it).")


def snap(index, t: float, track_id: int | None, tolerance_ns: float) -> int:
    """`t` moved to the nearest start or end of an event on `track_id` within `tolerance_ns` (else `t`).

    `index` is the timeline's `TraceIndex`; only the lane's few intervals around `t` are read.
    """
    lane = index.lanes.get(track_id) if track_id is not None else None
    if lane is None or not len(lane.start):
        return int(round(t))
    a, b = lane.visible(t - tolerance_ns, t + tolerance_ns)
    if b <= a:
        return int(round(t))
    s = lane.start[a:b].astype(np.float64)
    edges = np.concatenate([s, s + lane.dur[a:b]])
    i = int(np.argmin(np.abs(edges - t)))
    return int(edges[i]) if abs(edges[i] - t) <= tolerance_ns else int(round(t))


def between(index, a: Annotation, b: Annotation):
    """What happened between two annotations' times, on every row: a `SelectionSummary`
    (busy time per row, instructions, FLOPs, DMA bytes, collective waits) over [earlier, later)."""
    from explorer.model.timeline.selection import area_scope, summarize_area

    t0, t1 = sorted((a.t0, b.t0))
    return summarize_area(index, area_scope(sorted(index.lanes), t0, max(t1, t0 + 1)))
