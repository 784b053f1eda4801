"""docs/trace-format.md holds exactly the table reference generated from the schema."""

from __future__ import annotations

from pathlib import Path

from simcore.trace.docgen import tables_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "trace-format.md"


def test_trace_format_doc_matches_schema():
    assert tables_markdown() in DOC.read_text(), "regenerate with: python -m simcore.trace.docgen"
