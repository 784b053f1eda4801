"""`trnx diff A B`: what changed from trace A to trace B (metrics, engines, ops, kernels).

Thin over `explorer.model.analysis.diff`; every delta is B - A and ratio is B / A.
"""

from __future__ import annotations

import json
import math
from typing import Any

import click

from explorer.cli.scope_options import pop_scope, scope_options
from explorer.model.analysis.diff import matching
from explorer.model.analysis.metrics import format_metric
from explorer.model.units import format_ns

TOP = 15


def _ratio(r: float | None) -> str:
    return "" if r is None or (isinstance(r, float) and math.isnan(r)) else f"x{r:.3g}"


def _signed_ns(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return ("+" if v > 0 else "") + format_ns(v)


@click.command(help="""Compare trace B against trace A: summary metric, engine, per-op and per-kernel time deltas.
--range/--chips/--cores/--tracks narrow both traces alike: metrics and engines, kernels on the cores in
scope, ops overlapping the window.

\b
Ops and kernels are matched by their place in the hierarchy, or with --align name by name
per level (layers, ops, kernels: counts and summed time, B / A ratio, largest |B - A| first).
A measured trace (an imported Neuron Explorer or PyTorch profile) against a simulated one is
aligned by name unless --align says otherwise: the loop that shows where the simulator is wrong.
  trnx diff measured.trnx simulated.trnx""")
@click.argument("a", type=click.Path())
@click.argument("b", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print every delta as JSON.")
@scope_options
@click.option("--top", default=TOP, show_default=True, type=click.IntRange(min=1),
              help="Ops and kernels with the largest time changes to show (text) or keep (JSON with --top given).")
@click.option("--align", type=click.Choice(["auto", "path", "name"]), default="auto", show_default=True,
              help="Match ops and kernels by hierarchy path, or by name per level; auto: by name when one trace is measured and the other simulated.")
def diff(a: str, b: str, as_json: bool, top: int, align: str, **selection: Any) -> None:
    from explorer.model.analysis.diff import diff as compute
    from simcore.trace import open_trace

    from explorer.interop.neuron_profile.as_trace import source_of, trace_path

    scope = pop_scope(selection, outside="allowed")  # (one trace may end before the window)
    d = compute(open_trace(trace_path(a)), open_trace(trace_path(b)), scope=scope)
    d.a, d.b = source_of(d.a) or d.a, source_of(d.b) or d.b  # a profile, not its temporary import
    ctx = click.get_current_context()
    if as_json:
        keep = top if ctx.get_parameter_source("top") == click.core.ParameterSource.COMMANDLINE else None
        click.echo(json.dumps(d.to_dict(top=keep), indent=2))
        return
    by_name = align == "name" or (align == "auto" and d.measured_vs_simulated)
    label = {True: "measured", False: "simulated"}
    click.echo(f"A  {d.a}  ({label[d.measured[0]]})\nB  {d.b}  ({label[d.measured[1]]})")
    click.echo(f"\n{'metric':<36} {'A':>16} {'B':>16} {'B/A':>9}")
    for r in d.metrics.to_dict("records"):
        if r["a"] is None and r["b"] is None:
            continue
        flag = {"a": "  (A better)", "b": "  (B better)"}.get(r["better"], "")
        click.echo(f"{r['metric']:<36} {format_metric(r['a'], r['unit']):>16} {format_metric(r['b'], r['unit']):>16} "
                   f"{_ratio(r['ratio']):>9}{flag}")
    click.echo(f"\n{'engine':<8} {'A active':>12} {'B active':>12} {'delta':>12} {'A %':>8} {'B %':>8}")
    for r in d.engines.to_dict("records"):
        click.echo(f"{r['engine']:<8} {format_metric(r['a_active_ns'], 'ns'):>12} {format_metric(r['b_active_ns'], 'ns'):>12} "
                   f"{_signed_ns(r['delta_ns']):>12} {format_metric(r['a_percent'], '%'):>8} {format_metric(r['b_percent'], '%'):>8}")
    if by_name:
        print_by_name(d.by_name, top)
        return
    for title, frame, a_col, b_col, label in (
        ("ops", d.ops, "a_dur_ns", "b_dur_ns", "key"),
        ("kernels (per op and name, summed over instances)", d.kernels, "a_time_ns", "b_time_ns", "name"),
    ):
        changed = frame[frame["delta_ns"].fillna(0) != 0]
        m = matching(frame)
        click.echo(f"\n{title}: {m.rows} compared, {m.changed} changed, {m.only_a} only in A, {m.only_b} only in B")
        if changed.empty:
            continue
        worst = changed.reindex(changed["delta_ns"].abs().sort_values(ascending=False, kind="stable").index).head(top)
        for r in worst.to_dict("records"):
            name = f"{r['path']} #{r['occurrence']}" if label == "key" else f"{r['op_key']} :: {r['name']}"
            a_v = format_metric(r[a_col], "ns")
            b_v = format_metric(r[b_col], "ns")
            click.echo(f"  {_signed_ns(r['delta_ns']):>11} {a_v:>11} -> {b_v:<11} {_ratio(r['ratio']):>8}  {name}")


def print_by_name(frame, top: int) -> None:
    """Layers, ops and kernels aligned by name: summed time in A and B, the ratio, largest |B - A| first."""
    for level in ("layer", "op", "kernel"):
        rows = frame[frame["level"] == level]
        if rows.empty:
            continue
        m = matching(rows)
        click.echo(f"\n{level}s by name: {m.rows} names, {m.matched} in both, {m.only_a} only in A, {m.only_b} only in B "
                   f"(largest |B - A| first)")
        click.echo(f"  {'B - A':>11} {'A time':>11}    {'B time':<11} {'B/A':>8} {'count A/B':>11}  name")
        for r in rows.head(top).to_dict("records"):
            counts = f"{r['a_count']}/{r['b_count']}"
            click.echo(f"  {_signed_ns(r['delta_ns']):>11} {format_metric(r['a_time_ns'], 'ns'):>11} -> "
                       f"{format_metric(r['b_time_ns'], 'ns'):<11} {_ratio(r['ratio']):>8} {counts:>11}  {r['name']}")
