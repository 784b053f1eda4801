"""Finding an event by id: the direct table for dense ids and the sorted index agree on every id."""

from __future__ import annotations

import numpy as np
import pytest

from model import analysis_traces as at
from explorer.model.events import DMA, INSTRUCTION, EventIndex
from simcore.errors import UserError
from simcore.trace import open_trace


def _ids(tables: dict) -> list[tuple[int, int, int]]:
    """(id, table code, row) of every event, as written."""
    return [(i, INSTRUCTION, r) for r, i in enumerate(tables["instructions"]["id"])] + [
        (i, DMA, r) for r, i in enumerate(tables["dma"]["id"])]


def _check(index: EventIndex, expected: list[tuple[int, int, int]], unknown: list[int]) -> None:
    q = np.array([i for i, _, _ in expected] + unknown)
    table, row = index.locate(q)
    assert table.tolist() == [t for _, t, _ in expected] + [-1] * len(unknown)
    assert row.tolist() == [r for _, _, r in expected] + [-1] * len(unknown)
    for i, t, r in expected:  # one id at a time, as a dependency walk asks
        assert [x.tolist() for x in index.locate(np.array([i]))] == [[t], [r]]
    assert len(index) == len(expected)


@pytest.mark.parametrize("scale", [1, 1000], ids=["dense ids", "sparse ids"])
def test_every_id_is_found_in_its_table_and_row(tmp_path, scale):
    tables = at.basic_tables()
    ins = tables["instructions"]
    order = [8, 2, 5, 0, 3, 6, 1, 4, 7]  # rows not in id order, as writers leave them (grouped by track)
    tables["instructions"] = {c: [v[i] for i in order] for c, v in ins.items()}
    for name in ("instructions", "dma"):
        tables[name]["id"] = [i * scale for i in tables[name]["id"]]
    tables["flows"] = {c: [i * scale for i in v] if c != "kind" else v for c, v in tables["flows"].items()}
    index = EventIndex(open_trace(at.write(tmp_path / "t.trnx", tables)))
    assert (index._dense is not None) == (scale == 1)
    _check(index, _ids(tables), unknown=[-5, 0, 10 * scale + 1, 999_999_999])


def test_a_repeated_id_is_the_first_table_and_row_holding_it(tmp_path):
    tables = at.basic_tables()
    tables["dma"]["id"][0] = 3  # also an instruction's id
    tables["instructions"]["id"][6] = 8  # instruction 8 twice: rows 6 and 7
    index = EventIndex(open_trace(at.write(tmp_path / "t.trnx", tables)))
    table, row = index.locate(np.array([3, 8, 21]))
    assert table.tolist() == [INSTRUCTION, INSTRUCTION, DMA] and row.tolist() == [2, 6, 1]
    assert index.event(8).row == 6
    with pytest.raises(UserError, match="event 77"):
        index.event(77)
