"""The pandas, polars and DuckDB one-liners in docs/trace-format.md run as written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from simcore.trace import TraceWriter
from tracegen import tiny_tables, write_tiny

DOC = Path(__file__).resolve().parents[1] / "docs" / "trace-format.md"


def one_liners() -> list[str]:
    block = re.search(r"## Opening a table in one line\s+```python\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/trace-format.md lost its one-liner block"
    return [line.split("  #")[0].strip() for line in block.group(1).strip().splitlines()]


@pytest.mark.parametrize("line", one_liners())
def test_one_liner_runs(tmp_path, monkeypatch, line):
    target = write_tiny(tmp_path / "run.trnx")
    if "pyarrow.dataset" in line:  # the partitioned example reads a partitioned table
        shutil.rmtree(target)
        with TraceWriter(target) as w:
            w.write("tracks", tiny_tables()["tracks"])
            w.write("instructions", tiny_tables()["instructions"], chip=0)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(line, scope)
    if "duckdb" in line:  # the query is the line's last expression
        query = eval(line.split("; ")[-1], scope)
        assert dict(query.fetchall()) == {"MultiplyMoving": 160, "TensorTensor": 160}
    else:
        result = scope["df"] if "df" in scope else scope["t"]
        assert (result.num_rows if hasattr(result, "num_rows") else len(result)) == 8
