"""`trnx validate TRACE`: run every format and data check the reader knows."""

from __future__ import annotations

import click

from simcore.trace import open_trace
from simcore.trace.schema import TABLES


@click.command(help="Check a trace: every table file's checksum (format 1.3 on), magic, version, tables, columns, types, durations and per-track order.")
@click.argument("trace", type=click.Path())
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def validate(trace: str, quiet: bool) -> None:
    t = open_trace(trace, validate=True)
    if not quiet:
        rows = sum(t.row_count(n) for n in TABLES)
        sums = ("every table file matches its checksum" if t.has_checksums
                else "no checksums recorded (written before format 1.3)")
        tables = sum(1 for n in TABLES if t.has_table(n))  # (a table a later minor version added may be absent)
        click.echo(f"{t.path}: valid trace format {t.version}, {tables} tables, {rows:,} rows; {sums}.")
