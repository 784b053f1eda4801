"""`trnx import TRACE.json[.gz] ... | PROFILE_DIR ... -o OUT.trnx`: PyTorch-profiler traces or Neuron
Explorer profiles into a trnx trace (a directory of `<Table>.parquet` files is a Neuron Explorer profile)."""

from __future__ import annotations

import json

import click

from explorer.cli.signals import sigterm_like_ctrl_c


@click.command(
    "import",
    help=(
        "Import PyTorch-profiler (Kineto) traces, one file per rank (.json or .json.gz), or Neuron Explorer "
        "profiles (directories of <Table>.parquet files, one per rank, or a directory of them) into a "
        "trnx trace. A Kineto file's rank comes from distributedInfo, else from 'rank<N>' in the file name; "
        "Neuron profiles are ranks 0.. in name order. "
        "Damaged files (truncated, trailing commas, control characters) keep every complete event. "
        "Prints each rank's temporal breakdown (idle / compute / non-compute) and communication overlap."
    ),
)
@click.argument("traces", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="The trace directory to write (NAME.trnx).")
@click.option("--python", "include_python", is_flag=True, help="Also import python_function events as ops (slower).")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it is a trace trnx wrote (anything else there is refused and left alone).")
@click.option("--json", "as_json", is_flag=True, help="Print the import report and breakdown as JSON.")
@click.option("-j", "--jobs", default=0, type=click.IntRange(min=0), help="Processes reading rank files in parallel (0: one per core).")
@sigterm_like_ctrl_c
def import_trace(traces: tuple[str, ...], output: str, include_python: bool, overwrite: bool, as_json: bool, jobs: int) -> None:
    from simcore.trace import open_trace
    from explorer.interop import import_kineto
    from explorer.cli.commands.summary import print_temporal
    from explorer.model.analysis.temporal import temporal_summary

    import os
    from pathlib import Path

    from explorer.interop.neuron_profile import import_neuron_profile, looks_like_profile
    from simcore.trace.target import check_target

    check_target(output, overwrite)  # before reading the inputs; checked again when the trace is written
    if any(looks_like_profile(Path(t)) for t in traces):
        neuron = import_neuron_profile(list(traces), output, overwrite=overwrite)
        temporal = temporal_summary(open_trace(neuron.path))
        t = temporal.to_dict() if temporal is not None else {"ranks": [], "stragglers": [], "straggler_ranks": []}
        if as_json:
            click.echo(json.dumps({"path": str(neuron.path), "ranks": neuron.ranks, "rows": neuron.rows,
                                   "notes": neuron.notes, "breakdown": t["ranks"], "stragglers": t["straggler_ranks"]}, indent=2))
            return
        for note in neuron.notes:
            click.echo(f"note: {note}", err=True)
        rows = ", ".join(f"{n} {c:,}" for n, c in neuron.rows.items())
        click.echo(f"wrote {neuron.path}: {len(neuron.ranks)} rank(s) from Neuron Explorer profiles; {rows}")
        if temporal is not None:
            print_temporal(t)
        return
    report = import_kineto(list(traces), output, include_python=include_python, overwrite=overwrite,
                           workers=jobs if jobs > 0 else (os.cpu_count() or 1))
    trace = open_trace(report.path)
    temporal = temporal_summary(trace)
    t = temporal.to_dict() if temporal is not None else {"ranks": [], "stragglers": [], "straggler_ranks": []}
    # rows HTA 0.5.0 does not analyse (its last profiler step, events without a stream): kineto.hta
    left_out = {table: sum(hi - lo for lo, hi in runs) for table, runs in trace.meta["capture"]["hta_excluded"].items()}
    if as_json:
        click.echo(json.dumps({
            "path": str(report.path), "ranks": report.ranks, "rows": report.rows,
            "skipped_events": report.skipped_events, "repairs": report.repairs,
            "breakdown": t["ranks"], "stragglers": t["straggler_ranks"], "breakdown_left_out": left_out,
        }, indent=2))
        return
    for path, how in report.repairs.items():
        click.echo(f"note: {path}: {how}", err=True)
    if report.skipped_events:
        click.echo(f"note: skipped {report.skipped_events:,} malformed events", err=True)
    rows = ", ".join(f"{n} {c:,}" for n, c in report.rows.items())
    click.echo(f"wrote {report.path}: {len(report.ranks)} rank(s); {rows}")
    if temporal is not None:
        print_temporal(t)
        if any(left_out.values()):
            click.echo(f"  as Holistic Trace Analysis does, the breakdown leaves out {left_out['kernels']:,} kernels and "
                       f"{left_out['dma']:,} copies: the last profiler step's, and events without a stream")
