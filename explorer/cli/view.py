"""`trnx view [TRACE] [--smoke-test]`: open the desktop explorer."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from simcore.errors import UserError


@click.command(help="Open the Trn3 Explorer window, loading TRACE (a .trnx directory) if given.")
@click.argument("trace", required=False, type=click.Path())
@click.option("--smoke-test", is_flag=True, help="Build the window, render one frame and exit (packaging check).")
def view(trace: str | None, smoke_test: bool) -> None:
    if trace is not None and not Path(trace).exists():
        raise UserError(f"{trace} does not exist.")
    if smoke_test:
        from explorer.ui.smoke import smoke_test as run_smoke_test

        ms = run_smoke_test(trace)
        click.echo(f"trnx view: window built, first frame rendered in {ms:.1f} ms")
        return
    from explorer.ui import run

    sys.exit(run(trace))
