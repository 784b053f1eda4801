"""Generate the table reference of docs/trace-format.md from the schema.

`python -m simcore.trace.docgen` prints the block; a test checks that the doc
holds exactly this block, so the doc cannot drift from the code.
"""

from __future__ import annotations

import pyarrow as pa

from simcore.trace import schema as S

BEGIN = "<!-- BEGIN GENERATED TABLES (python -m simcore.trace.docgen) -->"
END = "<!-- END GENERATED TABLES -->"


def _type(t: pa.DataType) -> str:
    return "string (dictionary)" if pa.types.is_dictionary(t) else str(t)


def tables_markdown() -> str:
    out = [BEGIN, ""]
    for spec in S.TABLES.values():
        out.append(f"### `{spec.name}`")
        out.append("")
        out.append(spec.doc)
        out.append("")
        out.append("| column | type | unit | meaning |")
        out.append("|---|---|---|---|")
        for c in spec.columns:
            out.append(f"| `{c.name}` | {_type(c.type)} | {c.unit} | {c.doc} |")
        out.append("")
    out.append(END)
    return "\n".join(out)


if __name__ == "__main__":
    print(tables_markdown())
