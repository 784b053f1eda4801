"""Opening a trace that has no saved index validates it (after its first frame) on mappings of
its own, let go when done: what only validation read (every dictionary column's codes, the
flows) does not stay resident in the window's memory (issue 16: peak RSS within 1.5x the trace)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from explorer.ui.loader import load, validate_apart
from simcore.errors import TraceFormatError
from tracegen import reseal, write_tiny

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def _mapped(trace: Path) -> set[str]:
    """The names of the trace's files this process has mapped now."""
    names = set()
    for line in open("/proc/self/maps"):
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].strip().startswith(str(trace)):
            names.add(Path(fields[5].strip()).name)
    return names


def test_an_open_with_no_index_keeps_nothing_validation_alone_read_mapped(tmp_path):
    t = write_tiny(tmp_path / "t.trnx")
    assert not (t / "timeline-index.cache").exists()
    loaded = load(t)
    assert not loaded.validated  # shown first: the loader validates it next
    validate_apart(t)
    gc.collect()
    assert "instructions.arrow" in _mapped(t)  # what the timeline draws
    assert "flows.arrow" not in _mapped(t)  # validated, then let go


def test_an_open_with_no_index_still_validates(tmp_path):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    t = write_tiny(tmp_path / "t.trnx")
    f = t / "instructions.arrow"
    table = ipc.open_file(pa.memory_map(str(f))).read_all()
    dur = table.column("dur_ns").to_pylist()
    dur[3] = -5
    table = table.set_column(table.schema.get_field_index("dur_ns"), "dur_ns", pa.array(dur, pa.int64()))
    with ipc.new_file(str(f) + ".new", table.schema) as w:
        w.write_table(table)
    Path(str(f) + ".new").replace(f)
    reseal(t)
    with pytest.raises(TraceFormatError, match="negative duration at row 3"):
        load(t)
