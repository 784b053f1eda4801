"""`trnx query TRACE "SQL"`: DuckDB SQL over a trace's tables (explorer.model.query)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import click

TEXT_ROWS = 50
WRITERS = (".parquet", ".csv", ".json")


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def _text(table, limit: int) -> str:
    """An aligned text table of the first `limit` rows (numbers right-aligned)."""
    import pyarrow as pa

    head = table.slice(0, limit)
    cols = head.column_names
    rows = [[_cell(v) for v in r.values()] for r in head.to_pylist()]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in head.schema]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

    out = [line(cols), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    if table.num_rows > limit:
        out.append(f"... {table.num_rows - limit:,} more rows ({table.num_rows:,} in all; --csv, --json or -o FILE for every row)")
    elif not rows:
        out.append("(no rows)")
    return "\n".join(out)


def _json_text(table) -> str:
    def clean(v: object) -> object:
        return None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v

    rows = [{k: clean(v) for k, v in r.items()} for r in table.to_pylist()]
    return json.dumps(rows, indent=1, default=str)


def _csv_text(table) -> str:
    import pyarrow.csv as pacsv

    sink = io.BytesIO()
    pacsv.write_csv(table, sink)
    return sink.getvalue().decode("utf-8")


def _check_output(out: Path, overwrite: bool) -> None:
    """Refuse `-o` before the query runs: an unknown format, a path inside a trace, or what is
    there already (the user's file) without --overwrite, which replaces only a plain file."""
    from simcore.atomic import check_output
    from simcore.errors import UserError

    if out.suffix.lower() not in WRITERS:
        raise UserError(f"cannot tell the format of {out}: name it .parquet, .csv or .json.")
    check_output(out, overwrite)


def _write(table, out: Path, overwrite: bool) -> None:
    from simcore.atomic import atomic_path

    suffix = out.suffix.lower()
    with atomic_path(out, overwrite=overwrite) as tmp:  # never replaces what appeared meanwhile without it
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, str(tmp), compression="zstd")
        elif suffix == ".csv":
            tmp.write_text(_csv_text(table), encoding="utf-8")
        else:
            tmp.write_text(_json_text(table), encoding="utf-8")


@click.command(help="""Run one read-only SQL query (DuckDB) over a trace's tables and print the result.

Every table of the trace is a view by its name (tracks, instructions, dma, kernels, ops,
collectives, counters, flows, and sbuf_allocations in a trace of format 1.4 or later); a table
partitioned per chip reads as one. Only SELECT
(WITH ... SELECT, EXPLAIN, DESCRIBE, SHOW) runs: nothing can change the trace or touch other files.
Bad SQL prints one sentence and exits 2.

\b
Examples:
  trnx query sample_traces/llama3.1-8b-decode.trnx "SELECT opcode, count(*) n, sum(dur_ns) ns FROM instructions GROUP BY 1 ORDER BY 3 DESC"
  trnx query sample_traces/llama3.1-8b-decode.trnx "SELECT k.name, i.* FROM instructions i JOIN kernels k USING (kernel_id) LIMIT 5" --csv
  trnx query sample_traces/llama3.1-70b-tp16-straggler.trnx "SELECT chip, sum(wait_ns) FROM collectives GROUP BY 1" --json
  trnx query run.trnx "SELECT * FROM collectives WHERE wait_ns > 10000" -o waits.parquet
  trnx query sample_traces/llama3.1-8b-decode.trnx "SELECT core, kind, max(bytes) FROM sbuf_allocations WHERE memory = 'sbuf' GROUP BY ALL" --csv""")
@click.argument("trace", type=click.Path())
@click.argument("sql")
@click.option("--json", "as_json", is_flag=True, help="Print every row as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print every row as CSV.")
@click.option("-o", "--output", type=click.Path(),
              help="Write every row to FILE (.parquet, .csv or .json; written atomically; an existing FILE is "
                   "replaced only with --overwrite, and never a file inside a trace directory).")
@click.option("--overwrite", is_flag=True,
              help="With -o: replace FILE if it is a plain file (never a directory or a symlink).")
@click.option("--rows", "limit", default=TEXT_ROWS, show_default=True, type=click.IntRange(min=1),
              help="Rows the text table shows (--json, --csv and -o give every row).")
def query(trace: str, sql: str, as_json: bool, as_csv: bool, output: str | None, overwrite: bool, limit: int) -> None:
    from explorer.model.query import query as run
    from explorer.model.units import plural
    from simcore.errors import UserError

    if sum(map(bool, (as_json, as_csv, output))) > 1:
        raise UserError("choose one of --json, --csv and -o.")
    if overwrite and not output:
        raise UserError("--overwrite replaces the file -o writes: give -o FILE too.")
    if output:
        _check_output(Path(output), overwrite)  # before the query: a long one is not run for nothing
    table = run(trace, sql)
    if output:
        _write(table, Path(output), overwrite)
        click.echo(f"wrote {plural(table.num_rows, 'row')} to {output}", err=True)
    elif as_json:
        click.echo(_json_text(table))
    elif as_csv:
        click.echo(_csv_text(table), nl=False)
    else:
        click.echo(_text(table, limit))
