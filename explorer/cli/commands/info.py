"""`trnx info TRACE`: what a trace holds, without reading its tables."""

from __future__ import annotations

import json
from collections import Counter

import click

from explorer.model.units import format_ns

from simcore.trace import open_trace
from simcore.trace.schema import TABLES


def describe(path: str) -> dict:
    """The facts `trnx info` prints, as plain data (also what `--json` emits)."""
    trace = open_trace(path, validate=False)
    tracks = trace.tracks
    chips = Counter(tracks.column("chip").to_pylist())
    hw, wl = trace.hardware, trace.workload
    return {
        "path": str(trace.path),
        "format_version": trace.version,
        "hardware": hw.get("name", "unknown"),
        "workload": wl.get("name", "unknown"),
        "span_ns": list(trace.span_ns),
        "duration_ns": trace.duration_ns,
        "rows": {name: trace.row_count(name) for name in TABLES},
        "partitioned": {name: trace.partition_chips(name) for name in TABLES if trace.partition_chips(name)},
        "tracks_per_chip": {int(c): n for c, n in sorted(chips.items())},
        "simulator": trace.meta.get("simulator", {}),
    }


@click.command(help="Describe a trace: hardware, workload, span, rows per table and tracks per chip.")
@click.argument("trace", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON.")
def info(trace: str, as_json: bool) -> None:
    facts = describe(trace)
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    click.echo(f"trace      {facts['path']} (format {facts['format_version']})")
    click.echo(f"hardware   {facts['hardware']}")
    click.echo(f"workload   {facts['workload']}")
    lo, hi = facts["span_ns"]
    click.echo(f"span       {lo} .. {hi} ns ({format_ns(facts['duration_ns'])})")
    click.echo("rows")
    for name, rows in facts["rows"].items():
        parts = facts["partitioned"].get(name)
        suffix = f"  ({len(parts)} chip partitions)" if parts else ""
        click.echo(f"  {name:<13}{rows:>14,}{suffix}")
    per_chip = facts["tracks_per_chip"]
    click.echo(f"chips      {len(per_chip)}")
    for chip, n in list(per_chip.items())[:16]:
        click.echo(f"  chip {chip:<4} {n} tracks")
    if len(per_chip) > 16:
        click.echo(f"  ... {len(per_chip) - 16} more chips")
