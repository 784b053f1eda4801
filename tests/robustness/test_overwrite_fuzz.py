"""Hypothesis fuzz of what sits at an output path (issue 12): whatever the tree, a write with
`overwrite=True` either replaces it -- only when it is a trace the tool wrote, with nothing but
its own files -- or is refused with one sentence and leaves every byte, name and link as it was."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustness.contract import assert_one_sentence, tree
from simcore.errors import UserError
from simcore.trace import TraceWriter, open_trace
from tracegen import tiny_tables, write_tiny

# extra entries put into (or instead of) a trace: name -> (is it the tool's own?, how to make it)
EXTRAS = {
    "index cache": (True, lambda t: (t / "timeline-index.cache").is_dir() or (t / "timeline-index.cache").write_bytes(b"c")),
    "cache temporary": (True, lambda t: (t / ".timeline-index.cache.trnx-tmp-1-0123abcd0123abcd").write_bytes(b"c")),
    "notes": (False, lambda t: (t / "notes.txt").write_text("mine")),
    "annotations": (False, lambda t: (t / "annotations.json").write_text("{}")),
    "hidden": (False, lambda t: (t / ".DS_Store").write_bytes(b"x")),
    "cache as dir": (False, lambda t: (t / "timeline-index.cache").mkdir()),
    "subdir": (False, lambda t: (t / "sub").mkdir()),
    "file in partition dir": (False, lambda t: ((t / "instructions").mkdir(exist_ok=True),
                                                (t / "instructions" / "x.arrow").write_bytes(b"x"))),
    "symlink": (False, lambda t: (t / "link").symlink_to("/")),
    "symlinked table": (False, lambda t: ((t / "tracks.arrow").unlink(missing_ok=True), (t / "tracks.arrow").symlink_to("dma.arrow"))),
    "stray arrow": (False, lambda t: (t / "other.arrow").write_bytes(b"ARROW1")),
}
BASES = ["trace", "foreign meta", "no meta", "meta not json", "file", "symlink to trace", "empty dir"]


def make(base: str, root: Path) -> Path:
    t = root / "out.trnx"
    if base == "trace":
        write_tiny(t)
    elif base == "foreign meta":
        t.mkdir()
        (t / "meta.json").write_text(json.dumps({"format": "other-tool", "tables": {}}))
    elif base == "no meta":
        write_tiny(t)
        (t / "meta.json").unlink()
    elif base == "meta not json":
        write_tiny(t)
        (t / "meta.json").write_text("{not json")
    elif base == "file":
        t.write_text("a file")
    elif base == "symlink to trace":
        write_tiny(root / "real.trnx")
        t.symlink_to("real.trnx")
    else:
        t.mkdir()
    return t


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(BASES), extras=st.sets(st.sampled_from(sorted(EXTRAS)), max_size=3))
def test_overwrite_replaces_only_our_trace_and_touches_nothing_else(base, extras):
    root = Path(tempfile.mkdtemp(prefix="trnx-overwrite-fuzz-"))
    try:
        t = make(base, root)
        directory = t.is_dir() and not t.is_symlink()
        for name in sorted(extras) if directory else ():
            EXTRAS[name][1](t)
        ours = base == "trace" and all(EXTRAS[n][0] for n in extras)
        before = tree(root)
        try:
            with TraceWriter(t, overwrite=True) as w:
                for name, data in tiny_tables(n_per_track=6).items():
                    w.write(name, data)
        except UserError as exc:
            assert_one_sentence(exc)
            assert not ours, f"refused our own trace: {exc}"
            assert tree(root) == before
        else:
            assert ours, f"replaced {base} with {sorted(extras)}"
            assert open_trace(t).instructions.num_rows == 12
            assert sorted(p.name for p in root.iterdir()) == ["out.trnx"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
