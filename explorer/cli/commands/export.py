"""`trnx export TRACE --format F -o OUT`: hand a trace to other tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from explorer.cli.scope_options import pop_scope, scope_options
from explorer.cli.signals import sigterm_like_ctrl_c
from simcore.trace import open_trace
from simcore.trace.schema import TABLES


@click.command(help="Export a trace table to Parquet or CSV, or the whole timeline to Chrome JSON or Perfetto (streamed, written atomically; an existing OUTPUT is replaced only with --overwrite, and never a file inside a trace directory). --range/--chips/--cores/--tracks keep the rows on those tracks that overlap the window, whole.")
@click.argument("trace", type=click.Path())
@click.option("--table", "table", type=click.Choice(list(TABLES)),
              help="The table to export (parquet and csv; the other formats write the whole timeline).")
@click.option("--format", "fmt", required=True, type=click.Choice(["parquet", "csv", "chrome-json", "perfetto", "neuron-explorer"]), help="Output format (chrome-json and perfetto open in ui.perfetto.dev; neuron-explorer writes a directory of Neuron Explorer's Parquet tables, one profile per logical NeuronCore, per chip for a chip-wide program).")
@click.option("-o", "--output", required=True, type=click.Path(), help="Output file (a new directory for neuron-explorer); never inside a trace directory.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it is a plain file (never a directory, a symlink or a file inside a trace).")
@scope_options
@sigterm_like_ctrl_c
def export(trace: str, table: str | None, fmt: str, output: str, overwrite: bool, **selection: Any) -> None:
    from explorer.export import FORMATS

    from simcore.atomic import check_output
    from simcore.errors import UserError

    if table is not None and fmt not in ("parquet", "csv"):  # (it was ignored: every event was written)
        raise UserError(f"--table chooses the one table parquet and csv write; --format {fmt} writes the whole "
                        "timeline (narrow it with --range, --chips, --cores or --tracks).")
    if fmt != "neuron-explorer":   # (that one writes a new directory; it checks the same itself)
        check_output(output, overwrite)   # before any work; checked again when the file is renamed in
    scope = pop_scope(selection)
    t = open_trace(trace)  # validated: what `trnx validate` refuses is never exported (one pass per column)
    rows = FORMATS[fmt](t, Path(output), {"table": table, "scope": scope, "overwrite": overwrite})
    click.echo(f"wrote {rows:,} rows to {output}", err=True)
