"""`trnx sweep`: capture every configuration of a grid and write DIR/results.parquet.

Thin over explorer.sweep: the fixed options are `trnx capture`'s own (generated from the
capture options' declaration), `--grid KEY=V1,V2,...` takes any of them, and the numbers are
explorer.model's. docs/sweeps.md explains running on a Dask cluster.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from explorer.cli.commands.capture import capture_options
from explorer.model.analysis.metrics import format_metric
from simcore.capture.options import OPTIONS
from simcore.errors import UserError

FIXED_OPTIONS = [o for o in OPTIONS.values() if o.recorded]   # --workers and --overwrite are the sweep's own


def _sweep_command(command):
    return capture_options(command, FIXED_OPTIONS)


@click.command(help="""Capture every configuration of a grid and write one row per configuration (grid values,
step time, tokens/s per chip, MFU, MBU, HBM per chip, fits, collective share, status and the reason for a
refusal) to DIR/results.parquet, rewritten after each finished row.

\b
The capture options below are fixed for every configuration; --grid varies any of them
(values separated by commas, or by ';' when a value has commas of its own). Configurations
run on a local Dask cluster of one worker process per core (--workers N; 1: in this process)
or on an existing cluster (--scheduler). --resume finishes a killed or interrupted sweep.

\b
Examples:
  trnx sweep -H trn3-ultraserver-gen1 -w llama3.1-70b --phase decode --grid tp=8,16 --grid batch=1,8 --grid dtype=bf16,fp8 -o sweep/
  trnx sweep -w gemm --grid 'shape=1024,1024,1024;4096,4096,4096' --grid dtype=bf16,mxfp8 --workers 1 -o gemm-sweep/
  trnx sweep -H trn3-ultraserver-gen1 -w llama3.1-8b --grid tp=1,2,4,8 --grid batch=1,16 --keep-traces -o tp-sweep/
  trnx sweep --resume -o sweep/
  trnx sweep -H trn3-ultraserver-gen2 -w llama3.1-405b --grid tp=16,32 --grid pp=1,2,4 --scheduler tcp://head:8786 -o big/

Open the results with explorer.open_sweep("sweep/"), pandas.read_parquet("sweep/results.parquet"),
`trnx view sweep/` or the desktop window's File > Open sweep.""")
@_sweep_command
@click.option("--grid", "-g", "grid", multiple=True, metavar="KEY=V1,V2,...",
              help="A capture option and the values to sweep it over (repeat for more keys; the first varies slowest).")
@click.option("--output", "-o", required=True, type=click.Path(), help="Sweep directory (new, empty, or a sweep to --resume).")
@click.option("--resume", is_flag=True, help="Finish the sweep in DIR: finished rows are kept, the rest run.")
@click.option("--keep-traces", is_flag=True, help="Keep every configuration's trace under DIR/traces/.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes running configurations (1: in this process).  [default: the machine's cores]")
@click.option("--scheduler", metavar="tcp://HOST:PORT", default=None,
              help="Run the configurations on this Dask cluster's workers instead (docs/sweeps.md).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary lines.")
def sweep(grid: tuple[str, ...], output: str, resume: bool, keep_traces: bool, workers: int | None,
          scheduler: str | None, quiet: bool, **given: Any) -> None:
    from explorer.sweep.run import run_sweep

    if workers is not None and scheduler is not None:
        raise UserError("--workers starts local processes and --scheduler uses a cluster's workers; give one of them.")
    fixed = {k: (list(v) or None) if isinstance(v, tuple) else v for k, v in given.items()}
    fixed = {k: v for k, v in fixed.items() if v is not None}
    if resume and not grid and fixed:
        raise UserError("--resume without --grid takes the options recorded in the sweep; leave the others off too.")
    t0 = time.perf_counter()
    show = not quiet and sys.stderr.isatty()
    bar: Any = None

    def started(to_run: int, before: int) -> None:
        nonlocal bar
        if before and not quiet:
            click.echo(f"resuming: {_n(before, 'configuration')} finished before, {to_run} to run", err=True)
        if show and to_run:
            bar = click.progressbar(length=to_run, label="sweep", file=sys.stderr, show_pos=True, show_eta=True)
            bar.__enter__()

    def progress(done: int, total: int, row: dict) -> None:
        if bar is not None:
            bar.label = f"sweep {row['status']:<7} config {row['config']}"
            bar.update(1)

    try:
        run = run_sweep(output, fixed, list(grid) if grid else None, resume=resume, keep_traces=keep_traces,
                        workers=workers, scheduler=scheduler, progress=progress, started=started)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if quiet:
        return
    counts = ", ".join(f"{run.count(s)} {s}" for s in ("ok", "refused", "failed") if run.count(s))
    click.echo(f"wrote {run.sweep.results_path}: {_n(len(run.rows), 'configuration')} ({counts or 'none'}); "
               f"{run.ran} run now in {time.perf_counter() - t0:.1f} s")
    ok = [r for r in run.rows if r["status"] == "ok" and r.get("tokens_per_s_per_chip") is not None]
    if ok:
        best = max(ok, key=lambda r: (r["tokens_per_s_per_chip"], -r["config"]))
        grid_keys = [a.name for a in run.sweep.spec.axes]
        click.echo(f"most tokens/s per chip: {format_metric(best['tokens_per_s_per_chip'], 'tokens/s')} at "
                   + " ".join(f"{k}={best[k]}" for k in grid_keys)
                   + f" (step {format_metric(best['step_time_ns'], 'ns')})")
    if run.count("failed"):
        click.echo(f"{_n(run.count('failed'), 'configuration')} failed (see the reason column); --resume runs them again.",
                   err=True)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
