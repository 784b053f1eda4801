"""`trnx export TRACE --format F -o OUT`: hand a trace to other tools."""

from __future__ import annotations

from pathlib import Path

import click

from simcore.trace import open_trace
from simcore.trace.schema import TABLES


def _chips(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"'{text}' is not a comma-separated list of chip numbers.") from None


@click.command(help="Export a trace table to Parquet or CSV, or the whole timeline to Chrome JSON or Perfetto (streamed, written atomically).")
@click.argument("trace", type=click.Path())
@click.option("--table", "table", type=click.Choice(list(TABLES)), help="The table to export.")
@click.option("--format", "fmt", required=True, type=click.Choice(["parquet", "csv", "chrome-json", "perfetto", "neuron-explorer"]), help="Output format (chrome-json and perfetto open in ui.perfetto.dev; neuron-explorer writes a directory of Neuron Explorer's Parquet tables, one profile per chip).")
@click.option("-o", "--output", required=True, type=click.Path(), help="Output file (a new directory for neuron-explorer).")
@click.option("--chips", default=None, help="Only these chips' partitions, e.g. 0,3 (partitioned tables).")
@click.option("--cores", default=None, help="Timeline formats: only these cores' rows, e.g. 0,1 (chip-level rows stay).")
@click.option("--range", "time_range", default=None, help="Timeline formats: only events overlapping START:END, e.g. 0:2ms, 1.5us:, :500000.")
def export(trace: str, table: str | None, fmt: str, output: str, chips: str | None, cores: str | None, time_range: str | None) -> None:
    from explorer.export import FORMATS

    t = open_trace(trace, validate=False)
    from explorer.export.selection import parse_ints

    options = {"table": table, "chips": _chips(chips), "cores": parse_ints(cores, "core"), "range": time_range}
    rows = FORMATS[fmt](t, Path(output), options)
    click.echo(f"wrote {rows:,} rows to {output}", err=True)
