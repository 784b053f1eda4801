"""The selection options every `trnx` command that selects shares: --range, --chips, --cores, --tracks.

One grammar (`explorer.model.scope.Scope.parse`): `--range 0:200us` or `1.2ms:1.5ms`
(ns when no unit; either side may be left open), `--chips 0,3`, `--cores 0,1`,
`--tracks 4,5`. A bad value is one sentence and exit 2, as for any `UserError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import click

from explorer.model.scope import RANGE_HELP, Scope

SCOPE_PARAMS = ("time_range", "chips", "cores", "tracks")


def scope_options(fn: Callable) -> Callable:
    """Add --range, --chips, --cores and --tracks to a command (its help says what they narrow)."""
    opts = [
        click.option("--range", "time_range", default=None, metavar="START:END", help=f"Only this window: {RANGE_HELP}."),
        click.option("--chips", default=None, metavar="LIST", help="Only these chips, e.g. 0,3."),
        click.option("--cores", default=None, metavar="LIST",
                     help="Only these cores, e.g. 0,1; chip-level rows (DMA rings, collectives, counters) stay."),
        click.option("--tracks", default=None, metavar="LIST", help="Only these track ids (the tracks table's), e.g. 4,5."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def pop_scope(params: dict[str, Any], *, outside: str = "refused") -> Scope:
    """The Scope the options parsed to, taken out of a command's keyword arguments. A --range wholly
    outside the trace is refused (a mistyped unit) unless `outside` is "allowed" (trnx diff: two
    traces of different lengths share one window)."""
    values = {k: params.pop(k, None) for k in SCOPE_PARAMS}
    scope = Scope.parse(values["time_range"], values["chips"], values["cores"], values["tracks"])
    return replace(scope, whole_window_outside=outside)
