"""annotations.json is the user's work: two windows (or processes) annotating one trace never lose
each other's annotations, and a file that cannot be read is never replaced by a change."""

from __future__ import annotations

import pytest

from explorer.model import annotations as A
from model.timeline_traces import write_timeline_trace
from simcore.errors import UserError


@pytest.fixture
def trace_dir(tmp_path):
    return write_timeline_trace(tmp_path / "t.trnx")


def test_two_windows_on_one_trace_keep_both_windows_annotations(trace_dir):
    first, second = A.AnnotationSet(trace_dir), A.AnnotationSet(trace_dir)  # both opened before either wrote
    a = first.add_marker(1_000, "from the first window")
    b = second.add_marker(2_000, "from the second window")
    assert a.id != b.id
    assert [(x.t0, x.note) for x in A.load(trace_dir)] == [(1_000, "from the first window"),
                                                            (2_000, "from the second window")]
    first.set_note(a.id, "edited")  # a change in one window keeps what the other added meanwhile
    assert [x.note for x in A.load(trace_dir)] == ["edited", "from the second window"]
    assert [x.note for x in first.items] == ["edited", "from the second window"]  # and shows it
    second.remove(b.id)
    first.add_range(3_000, 4_000, "third")
    assert [x.note for x in A.load(trace_dir)] == ["edited", "third"]
    assert [x.note for x in first.markers()] == ["edited"]  # the range is not a marker


def test_removing_the_last_annotation_in_one_window_keeps_one_another_added(trace_dir):
    first, second = A.AnnotationSet(trace_dir), A.AnnotationSet(trace_dir)
    a = first.add_marker(1_000, "mine")
    second.add_marker(5_000, "theirs")
    first.remove(a.id)  # the file is not deleted: the second window's annotation is still in it
    assert [x.note for x in A.load(trace_dir)] == ["theirs"]
    second.remove(second.items[0].id if second.items[0].note == "theirs" else second.items[1].id)
    assert not A.path_of(trace_dir).exists()  # the last one gone: no file left behind


def test_a_file_damaged_after_opening_is_never_replaced_by_a_change(trace_dir):
    s = A.AnnotationSet(trace_dir)
    s.add_marker(1_000, "kept")
    A.path_of(trace_dir).write_text("{hand-edited, broken")
    with pytest.raises(UserError, match="annotations.json is damaged"):
        s.add_marker(2_000, "new")
    assert A.path_of(trace_dir).read_text() == "{hand-edited, broken"
