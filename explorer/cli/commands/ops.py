"""`trnx ops TRACE [--level layer|op|kernel] [--sort time] [--top N] [--range/--chips/--cores/--tracks] [--json]`:
the operator table.

The numbers the GUI's operator tree shows per row (time, share, FLOPs, bytes, TFLOPS, GB/s,
MFU against the dtype's peak and BF16-normalised, MBU, roofline % at the row's share of
HBM, bound), from `explorer.model.analysis.operator_table`, so scripts and CI read the
same figures as the window.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click

from explorer.cli.scope_options import pop_scope, scope_options

from explorer.model.analysis.metrics import format_metric
from explorer.model.units import format_bytes, format_ns, format_rate_gbps

TEXT_COLUMNS = (  # header, width, cell
    ("name", 0, None),  # as wide as the longest path, up to NAME_WIDTH
    ("time", 10, lambda r: format_ns(r["time_ns"])),
    ("share", 7, lambda r: _pct(r["share_percent"])),
    ("FLOPs", 11, lambda r: format_metric(r["flops"], "FLOP")),
    ("bytes", 10, lambda r: format_bytes(r["bytes"])),
    ("TFLOPS", 7, lambda r: _num(r["tflops"])),
    ("GB/s", 10, lambda r: "" if r["gbps"] is None else format_rate_gbps(r["gbps"])),
    ("MFU", 7, lambda r: _pct(r["mfu_percent"])),
    ("MFU bf16", 8, lambda r: _pct(r["mfu_bf16_percent"])),
    ("MBU", 7, lambda r: _pct(r["mbu_percent"])),
    ("roofline", 8, lambda r: _pct(r["roofline_percent"])),
    ("bound", 11, lambda r: str(r["bound"])),
)
NAME_WIDTH = 60
KERNEL_COLUMNS = (("dtype", 6, lambda r: str(r["dtype"])), ("chip.core", 9, lambda r: f"{r['chip']}.{r['core']}"))


def _fit(text: str, width: int) -> str:
    """`text` in `width` characters, its start elided (the op's own name is at the end of a path)."""
    return text if len(text) <= width else "\u2026" + text[-(width - 1):]


def _pct(v) -> str:
    if v is None:
        return ""
    return f"{v:.1f}%" if abs(v) >= 0.1 or v == 0 else f"{v:.2f}%"


def _num(v) -> str:
    if v is None:
        return ""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


@click.command(help="""The operator table of a trace: per layer, op or kernel the time, share, FLOPs, HBM bytes, TFLOPS,
GB/s, MFU (against each kernel's own dtype peak, and BF16-normalised as the Neuron profiler does), MBU and
roofline % (HBM at the row's share of its chip's bandwidth), and what bounds it -- the numbers the GUI's
operator tree shows. --range/--chips/--cores/--tracks (the grammar of trnx summary) narrow it to the kernels on
those chips and cores that overlap the window: each op and layer sums only those, and is listed when it overlaps
the window and has a kernel or collective there (rows are whole, not clipped; time is the op's span).

\b
Examples:
  trnx ops run.trnx                           # ops, longest first
  trnx ops run.trnx --level layer --sort start
  trnx ops run.trnx --level kernel --top 20 --json
  trnx ops run.trnx --range 1ms:2ms --chips 0,3""")
@click.argument("trace", type=click.Path())
@click.option("--level", type=click.Choice(["layer", "op", "kernel"]), default="op", show_default=True,
              help="Which rows: layers, ops (the leaves under layers) or kernels.")
@click.option("--sort", "sort", type=click.Choice(["time", "start", "name", "flops", "bytes", "mfu", "mbu", "roofline"]),
              default="time", show_default=True,
              help="Order: time/flops/bytes/mfu/mbu largest first, roofline lowest first (furthest from the roof), "
                   "start in trace order, name alphabetically.")
@click.option("--top", type=int, default=None, help="Only the first N rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array, one object per row: level, name, path, node, time_ns, flops, bytes, mfu_percent, "
                   "mfu_bf16_percent, mbu_percent, roofline_percent, bound, ...")
@scope_options
@click.option("--chip", "chip", type=int, multiple=True, hidden=True)  # as trnx summary: repeatable, kept for scripts
def ops(trace: str, level: str, sort: str, top: int | None, as_json: bool, chip: tuple[int, ...],
        **selection: Any) -> None:
    from explorer.interop.neuron_profile.as_trace import trace_path
    from explorer.model.analysis.hierarchy import Hierarchy
    from explorer.model.analysis.operator_table import operator_table, records
    from explorer.model.analysis.scoped_hierarchy import ScopedHierarchy
    from explorer.model.scope import Scope
    from simcore.trace import open_trace

    scope = pop_scope(selection)
    if chip:
        scope = replace(scope, chips=tuple(sorted(set(chip) | set(scope.chips or ()))))
    t = open_trace(trace_path(trace))
    h = Hierarchy(t) if scope == Scope() else ScopedHierarchy(t, scope)
    rows = records(operator_table(h, level, sort, top))
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if isinstance(h, ScopedHierarchy):  # what the selection resolved to (open ends closed on the trace)
        s = h.scope
        named = (("chips", s.chips), ("cores", s.cores), ("tracks", s.track_ids))
        click.echo(", ".join([f"scope  {s.t0}..{s.t1} ns"] + [f"{noun} {','.join(map(str, ids))}"
                                                               for noun, ids in named if ids is not None]))
    width = min(max([len(str(r["path"] or r["name"])) for r in rows] + [4]), NAME_WIDTH)
    name = ("name", width, lambda r: _fit(str(r["path"] or r["name"]), width))
    columns = (name,) + TEXT_COLUMNS[1:] + (KERNEL_COLUMNS if level == "kernel" else ())
    click.echo("  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w, _) in enumerate(columns)))
    for r in rows:
        click.echo("  ".join(f"{f(r):<{w}}" if i == 0 else f"{f(r):>{w}}" for i, (_, w, f) in enumerate(columns)))
    if not rows:
        click.echo(f"(no {level} rows in this trace{'' if scope == Scope() else ' within the selection'})")
