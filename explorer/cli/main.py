"""`trnx` entry point: a click group whose commands load lazily.

Each command lives in its own module under `explorer.cli.commands` and is listed in
`COMMANDS`; `trnx --help` imports none of them, so it answers instantly. Errors a
user caused (`UserError`, unreadable files) print one line on stderr and exit 2.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from explorer import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module:attribute, one-line help shown by `trnx --help`)
    "info": ("explorer.cli.commands.info:info", "Describe a trace: hardware, workload, span, rows per table."),
    "validate": ("explorer.cli.commands.validate:validate", "Check a trace's format and data invariants."),
    "export": ("explorer.cli.commands.export:export", "Export a table (Parquet, CSV) or the timeline (Chrome JSON, Perfetto)."),
    "capture": ("explorer.cli.commands.capture:capture", "Simulate a workload on a Trainium preset and write a trace."),
    "presets": ("explorer.cli.commands.presets:presets", "List hardware presets, models and micro-benchmarks for capture."),
    "summary": ("explorer.cli.commands.summary:summary", "Summary metrics, collectives and recommendations of a trace."),
    "ops": ("explorer.cli.commands.ops:ops", "The operator table: time, FLOPs, bytes, MFU, MBU, roofline % and bound per layer, op or kernel."),
    "diff": ("explorer.cli.commands.diff:diff", "Compare two traces: metric, engine, op and kernel deltas."),
    "query": ("explorer.cli.commands.query:query", "Run a read-only SQL query (DuckDB) over a trace's tables."),
    "view": ("explorer.cli.commands.view:view", "Open the desktop explorer window on a trace (--smoke-test: render one frame, exit)."),
    "import": ("explorer.cli.commands.import_trace:import_trace", "Import PyTorch-profiler (Kineto) traces of one or many ranks."),
    "sweep": ("explorer.cli.commands.sweep:sweep", "Capture a grid of configurations (locally or on a Dask cluster) into results.parquet."),
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target[0].partition(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="trnx")
def cli() -> None:
    """trnx: capture, inspect, compare and view Trainium3 timeline traces."""


def main(argv: list[str] | None = None) -> Any:
    """Run `trnx`, turning user errors into one line on stderr and exit code 2."""
    from explorer.cli.errors import run_with_user_errors

    return run_with_user_errors(cli, argv)


if __name__ == "__main__":
    sys.exit(main())
