"""How `trnx` reports bad input: one sentence on stderr, exit code 2, no traceback.

The sentence comes from `simcore.errors.describe`, the same function the GUI's error
dialogs use. Out of memory is bad input too (the input is too big for this machine):
the sentence says how much memory the command needs for the input it was given.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from explorer.cli.signals import EXIT_TERMINATED, Terminated
from simcore.errors import (
    MiB, MemoryNeed, address_space_limit, describe, near_memory_limit, out_of_memory, path_bytes, user_caused,
)

EXIT_BAD_INPUT = 2

# Peak memory per command: resident (RSS) and address space (AS, what `ulimit -v` limits), as a
# fixed part plus a multiple of the input's size (trace directories, Kineto files), fitted with a
# margin to the smallest limits that worked for 1, 27 and 154 MiB traces and a 19 MB Kineto file,
# with at most two malloc arenas under a limit (fewer_arenas_under_a_limit; docs/PERFORMANCE.md,
# "Memory under a limit"; tests/robustness/test_memory_limit.py checks them).
MEMORY_NEEDS = {
    "validate": MemoryNeed(150 * MiB, 1.0, 400 * MiB, 0.8),
    "info": MemoryNeed(150 * MiB, 0.1, 320 * MiB, 0.1),
    "summary": MemoryNeed(150 * MiB, 1.3, 430 * MiB, 0.8),
    "diff": MemoryNeed(150 * MiB, 1.0, 420 * MiB, 0.9),
    "export": MemoryNeed(150 * MiB, 2.6, 540 * MiB, 2.1),
    "import": MemoryNeed(150 * MiB, 8.0, 450 * MiB, 9.0),  # the tolerant JSON parser's objects: ~8x
}
DEFAULT_NEED = MemoryNeed(150 * MiB, 2.6, 540 * MiB, 2.1)


def _report(message: str) -> int:
    click.echo(f"trnx: error: {message}", err=True)
    return EXIT_BAD_INPUT


def _terminated() -> None:
    click.echo("trnx: terminated (SIGTERM); nothing half-written was left behind.", err=True)
    sys.exit(EXIT_TERMINATED)


def input_bytes(argv: list[str]) -> int:
    """Total size of the files and directories named on the command line (the input)."""
    return sum(path_bytes(a) for a in argv if not a.startswith("-") and len(a) < 4096)


def _command(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _doing(argv: list[str]) -> str:
    command = _command(argv)
    return f"run trnx {command}" if command else "run trnx"


def memory_need(argv: list[str]) -> int | None:
    """About how much memory this command line needs (None when its input says nothing: capture)."""
    command = _command(argv)
    if command in ("capture", "sweep", "presets", None):
        return None
    size = input_bytes(argv[1:] if argv and argv[0] == command else argv)
    return MEMORY_NEEDS.get(command, DEFAULT_NEED).bytes_for(size) if size else None


def fewer_arenas_under_a_limit() -> None:
    """Under an address-space limit, let glibc keep at most two malloc arenas and Arrow allocate
    through it: each thread that allocates would otherwise reserve its own 64 MiB of address
    space (Arrow's and numpy's pools start several) and mimalloc its own segments, which under
    `ulimit -v` is limit spent on nothing, and a varying amount (success was not even monotonic
    in the limit: a trace that validated at 340 MiB failed at 360-380)."""
    if address_space_limit() is None or not sys.platform.startswith("linux"):
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy is not loaded yet: one BLAS thread's buffers
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())  # (mimalloc reserves address space in large segments too)
    pa.set_cpu_count(1)  # and every worker thread reserves a stack and an arena: one of each pool
    pa.set_io_thread_count(1)


def run_with_user_errors(cli: click.Command, argv: list[str] | None) -> Any:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        fewer_arenas_under_a_limit()
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
    except Terminated:
        _terminated()
    except KeyboardInterrupt:
        if near_memory_limit():  # (numpy's C start-up reports a failed allocation so, under ulimit -v)
            sys.exit(_report(describe(MemoryError(), _doing(args), memory_need(args))))
        click.echo("trnx: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if not user_caused(exc) or os.environ.get("TRNX_TRACEBACK"):
            raise  # a bug: keep its traceback
        need = memory_need(args) if out_of_memory(exc) else None
        sys.exit(_report(describe(exc, _doing(args), need)))
