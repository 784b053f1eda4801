"""`trnx summary TRACE`: the summary metrics, collectives and recommendations of a trace.

Thin over `explorer.model`: the numbers are `summarize()`'s, the same the GUI's
summary panel shows; `--json` prints them as data.
"""

from __future__ import annotations

import json
from typing import Any

import click

from explorer.model.metrics import GROUPS, METRICS, format_metric
from explorer.model.units import format_bytes, format_ns
from simcore.errors import UserError

TOP_COLLECTIVES = 5


def parse_range(text: str | None) -> tuple[int, int] | None:
    """'1000:5000' (ns) -> (1000, 5000)."""
    if not text:
        return None
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(lo), int(hi)
    except ValueError:
        raise UserError(f"--range '{text}' is not START:END in integer nanoseconds (e.g. 0:250000).") from None


format_value = format_metric  # the same formatting as the GUI's summary panel


def build_report(path: str, chips: tuple[int, ...], time_range: str | None, per_chip: bool,
                 recommendations: bool) -> dict[str, Any]:
    """Everything `trnx summary` prints, as plain data (what `--json` emits)."""
    from explorer.model.collective_stats import collective_table
    from explorer.model.recommendations import recommend
    from explorer.model.scope import Scope, Tracks
    from explorer.model.summary import summarize, summarize_per_chip
    from simcore.trace import open_trace

    trace = open_trace(path)  # full validation: ~15 ms on 10M rows
    window = parse_range(time_range)
    summary = summarize(trace, chips=list(chips) or None, time_range=window)
    report: dict[str, Any] = {
        "trace": str(trace.path),
        "hardware": trace.hardware.get("name", "unknown"),
        "workload": trace.workload.get("name", "unknown"),
        **summary.to_dict(),
    }
    if per_chip:
        report["per_chip"] = {
            str(c): s.metrics for c, s in summarize_per_chip(trace, window).items() if not chips or c in chips
        }
    scope = Scope.resolve(trace, Tracks.of(trace), list(chips) or None, window, None)
    coll = collective_table(trace, scope)
    report["collectives"] = coll.to_dict("records")
    if recommendations:
        whole = not chips and window is None
        recs = recommend(trace, summary=summary) if whole else recommend(trace)
        report["recommendations"] = [r.to_dict() for r in recs]
    return report


def print_report(r: dict[str, Any]) -> None:
    scope = r["scope"]
    click.echo(f"trace      {r['trace']}")
    click.echo(f"hardware   {r['hardware']}    workload {r['workload']}")
    chips = "all" if scope["chips"] is None else ",".join(map(str, scope["chips"]))
    click.echo(f"scope      {scope['t0_ns']}..{scope['t1_ns']} ns, chips {chips}: "
               f"{scope['cores']} cores on {scope['chips_with_work']} chips did work")
    m, why = r["metrics"], r["unavailable"]
    for group in GROUPS:
        click.echo(f"\n{group}")
        for spec in (s for s in METRICS if s.group == group):
            value = format_value(m[spec.name], spec.unit)
            note = f"  ({why[spec.name].rstrip('.')})" if spec.name in why else ""
            click.echo(f"  {spec.name:<36} {value:>16}{note}")
    coll = r["collectives"]
    if coll:
        worst = sorted(coll, key=lambda c: -c["total_wait_ns"])[:TOP_COLLECTIVES]
        click.echo(f"\ncollectives ({len(coll)}; the {len(worst)} with the most waiting)")
        click.echo(f"  {'id':>6} {'kind':<15} {'ranks':>5} {'bytes':>11} {'transfer':>11} {'total wait':>11} "
                   f"{'max wait':>11}  slowest rank")
        for c in worst:
            click.echo(f"  {c['collective_id']:>6} {c['kind']:<15} {c['group_size']:>5} {format_bytes(c['bytes']):>11} "
                       f"{format_ns(c['transfer_ns']):>11} {format_ns(c['total_wait_ns']):>11} "
                       f"{format_ns(c['max_wait_ns']):>11}  chip {c['slowest_chip']} rank {c['slowest_rank']} "
                       f"(+{format_ns(c['slowest_lead_ns'])})")
    if "recommendations" in r:
        recs = r["recommendations"]
        click.echo(f"\nrecommendations ({len(recs)})" if recs else "\nrecommendations: none fired")
        for i, rec in enumerate(recs, 1):
            click.echo(f"  {i}. {rec['title']} [{rec['rule']}, {format_ns(rec['impact_ns'])}, "
                       f"{rec['impact_percent']:.1f}%]")
            click.echo(f"     {rec['advice']}")
            for link in rec["links"]:
                where = f"{link['node']} " if link["node"] else ""
                click.echo(f"     -> {where}tracks {','.join(map(str, link['track_ids']))} "
                           f"{link['t0']}..{link['t1']} ns: {link['label']}")


@click.command(help="Summary metrics (Neuron profiler names), collectives and recommendations of a trace.")
@click.argument("trace", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--chip", "chips", type=int, multiple=True, help="Only this chip (repeat for several).")
@click.option("--range", "time_range", default=None, metavar="START:END", help="Only this window, in trace ns.")
@click.option("--per-chip", is_flag=True, help="Also report every chip's metrics.")
@click.option("--no-recommendations", is_flag=True, help="Skip the recommendation rules.")
def summary(trace: str, as_json: bool, chips: tuple[int, ...], time_range: str | None, per_chip: bool,
            no_recommendations: bool) -> None:
    report = build_report(trace, chips, time_range, per_chip, not no_recommendations)
    if as_json:
        click.echo(json.dumps(report, indent=2, default=_json_default))
        return
    print_report(report)
    if per_chip:
        click.echo("\nper chip")
        columns = (("total_active_time_percent", "active"), ("mfu_estimated_percent", "MFU"),
                   ("mbu_estimated_percent", "MBU"), ("tensor_engine_active_time_percent", "tensor active"),
                   ("hbm_bandwidth_gbps", "HBM"), ("collective_wait_ns", "collective wait"))
        click.echo("  chip " + " ".join(f"{label:>15}" for _, label in columns))
        for chip, m in report["per_chip"].items():
            cells = [format_value(m[n], next(s.unit for s in METRICS if s.name == n)) for n, _ in columns]
            click.echo(f"  {chip:>4} " + " ".join(f"{c:>15}" for c in cells))


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")
