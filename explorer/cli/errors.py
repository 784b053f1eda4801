"""How `trnx` reports bad input: one sentence on stderr, exit code 2, no traceback."""

from __future__ import annotations

import sys
from typing import Any

import click

from explorer.cli.signals import EXIT_TERMINATED, Terminated
from simcore.errors import UserError

EXIT_BAD_INPUT = 2


def _report(message: str) -> int:
    click.echo(f"trnx: error: {message}", err=True)
    return EXIT_BAD_INPUT


def _terminated() -> None:
    click.echo("trnx: terminated (SIGTERM); nothing half-written was left behind.", err=True)
    sys.exit(EXIT_TERMINATED)


def run_with_user_errors(cli: click.Command, argv: list[str] | None) -> Any:
    try:
        return cli.main(args=argv, prog_name="trnx", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort as exc:  # click turns Ctrl+C (and SIGTERM, explorer/cli/signals.py) into Abort
        if isinstance(exc.__cause__, Terminated):
            _terminated()
        click.echo("trnx: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:  # usage errors: click's own one-liner, exit 2
        exc.show()
        sys.exit(exc.exit_code)
    except UserError as exc:
        sys.exit(_report(str(exc)))
    except OSError as exc:  # unreadable input, unwritable output
        where = f" {exc.filename}" if exc.filename else ""
        sys.exit(_report(f"cannot access{where}: {exc.strerror or exc}."))
    except Terminated:
        _terminated()
    except KeyboardInterrupt:
        click.echo("trnx: interrupted", err=True)
        sys.exit(130)
