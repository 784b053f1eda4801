"""`trnx summary TRACE`: the summary metrics, collectives, temporal breakdown and recommendations.

Thin over `explorer.model`: the numbers are `summarize()`'s, the same the GUI's
summary panel shows, and, for traces with two or more ranks or communication,
`temporal_summary()`'s per-rank breakdown, overlap and stragglers; `--json` prints
them as data.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click

from explorer.cli.scope_options import pop_scope, scope_options
from explorer.model.analysis.metrics import GROUPS, METRICS, format_metric
from explorer.model.deep_link import link_text
from explorer.model.scope import Scope
from explorer.model.units import format_bytes, format_ns, plural

TOP_COLLECTIVES = 5


def build_report(path: str, scope: Scope, per_chip: bool, recommendations: bool) -> dict[str, Any]:
    """Everything `trnx summary` prints, as plain data (what `--json` emits): `TraceAnalysis.report`,
    the same composition the GUI's panels read."""
    from explorer.interop.neuron_profile.as_trace import source_of, trace_path
    from explorer.model.analysis.trace_analysis import TraceAnalysis
    from simcore.trace import open_trace

    trace = open_trace(trace_path(path))  # full validation: ~15 ms on 10M rows
    report = TraceAnalysis(trace, scope).report(per_chip=per_chip, recommendations=recommendations)
    report["trace"] = source_of(report["trace"]) or report["trace"]  # a profile, not its temporary import
    return report


def print_report(r: dict[str, Any]) -> None:
    scope = r["scope"]
    click.echo(f"trace      {r['trace']}")
    click.echo(f"hardware   {r['hardware']}    workload {r['workload']}")
    chips = "all" if scope["chips"] is None else ",".join(map(str, scope["chips"]))
    click.echo(f"scope      {scope['t0_ns']}..{scope['t1_ns']} ns, chips {chips}: "
               f"{plural(scope['cores'], 'core')} on {plural(scope['chips_with_work'], 'chip')} did work")
    m, why = r["metrics"], r["unavailable"]
    for group in GROUPS:
        click.echo(f"\n{group}")
        for spec in (s for s in METRICS if s.group == group):
            value = format_metric(m[spec.name], spec.unit)
            note = f"  ({why[spec.name].rstrip('.')})" if spec.name in why else ""
            click.echo(f"  {spec.name:<36} {value:>16}{note}")
    if r.get("step"):
        from explorer.model.analysis.step import STEP_METRICS

        click.echo("\nstep (the whole trace)")
        for spec in STEP_METRICS:
            click.echo(f"  {spec.name:<36} {format_metric(r['step'][spec.name], spec.unit):>16}")
    if r.get("step_breakdown"):
        print_breakdown(r["step_breakdown"])
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
    if r.get("profile_summary"):
        print_profile_summary(r["profile_summary"])
    if r.get("temporal"):
        print_temporal(r["temporal"])
    if "recommendations" in r:
        from explorer.model.analysis.recommendations import evidence_label, evidence_text

        recs = r["recommendations"]
        click.echo(f"\nrecommendations ({len(recs)})" if recs else "\nrecommendations: none fired")
        if recs:
            click.echo("  (open a link with: trnx view TRACE --goto LINK)")
        for i, rec in enumerate(recs, 1):
            click.echo(f"  {i}. {rec['title']} [{rec['rule']}, {format_ns(rec['impact_ns'])} on the critical path, "
                       f"{rec['impact_percent']:.1f}% of the trace]")
            click.echo(f"     {rec['advice']}")
            units = rec.get("evidence_units", {})
            click.echo("     evidence: " + "; ".join(
                f"{evidence_label(k)} {evidence_text(v, units.get(k, ''))}" for k, v in rec["evidence"].items()))
            for link in rec["links"]:  # the text after -> is what `trnx view TRACE --goto` takes
                click.echo(f"     -> {link_text(link['node'], link['t0'], link['t1'])}  tracks "
                           f"{','.join(map(str, link['track_ids']))} {link['t0']}..{link['t1']} ns: {link['label']}")


def print_breakdown(b: dict[str, Any]) -> None:
    """Where the step's time goes on its critical chip; the parts sum to the step time."""
    click.echo(f"\nwhere the step's time goes (critical path: chip {b['chip']}; the parts sum to "
               f"{format_ns(b['step_time_ns'])})")
    from explorer.model.analysis.step_breakdown import shown_part

    for p in b["parts"]:
        if shown_part(p):
            click.echo(f"  {p['label']:<36} {format_ns(p['ns']):>16} {p['percent']:>6.1f}%")


def print_profile_summary(rows: list[dict[str, Any]]) -> None:
    """The Neuron Explorer profile's own Summary beside ours, per rank, disagreements named."""
    bad = [r for r in rows if r["disagrees"]]
    click.echo(f"\nNeuron Explorer's Summary beside ours ({len(rows)} fields compared, {len(bad)} disagree; "
               "ours over each rank's own window)")
    click.echo(f"  {'chip':>4} {'Neuron field':<36} {'profile':>16} {'ours':>16}")
    for r in rows:
        flag = "  DISAGREES" if r["disagrees"] else ""
        click.echo(f"  {r['chip']:>4} {r['field']:<36} {format_metric(r['profile'], r['unit']):>16} "
                   f"{format_metric(r['ours'], r['unit']):>16}{flag}")
    if bad:
        click.echo("  disagreements: " + "; ".join(f"chip {r['chip']} {r['field']}" for r in bad))


def print_temporal(t: dict[str, Any]) -> None:
    """Each rank's temporal breakdown and overlap (HTA's definitions), then the stragglers."""
    click.echo("\ntemporal breakdown per rank (% of the rank's window: first to last device activity)")
    click.echo(f"  {'rank':>4} {'window':>10} {'idle %':>7} {'compute %':>10} {'non-compute %':>14} "
               f"{'communication':>14} {'comm/comp overlap %':>20}")
    for x in t["ranks"]:
        overlap = "n/a" if x["overlap_pct"] is None else f"{x['overlap_pct']:.1f}"
        click.echo(f"  {x['rank']:>4} {format_ns(x['window_ns']):>10} {x['idle_pct']:>7.1f} {x['compute_pct']:>10.1f} "
                   f"{x['non_compute_pct']:>14.1f} {format_ns(x['comm_ns']):>14} {overlap:>20}")
    rows = {x["rank"]: x for x in t["stragglers"]}
    if not any(x["collectives"] for x in rows.values()):
        click.echo("  stragglers: none to find (no collective of two or more ranks in scope)")
    elif not t["straggler_ranks"]:
        click.echo("  stragglers: none (no rank arrived last at most of its collectives)")
    for rank in t["straggler_ranks"]:
        x = rows[rank]
        click.echo(f"  straggler: rank {rank} arrived last at {x['last_arrivals']} of its {x['collectives']} collectives, "
                   f"{format_ns(round(x['mean_lateness_ns']))} after the first rank on average; "
                   f"the others waited {format_ns(x['caused_wait_ns'])} for it")


@click.command(help="Summary metrics (Neuron profiler names), collectives, per-rank temporal breakdown and recommendations of a trace. --range/--chips/--cores/--tracks narrow the metrics, collectives and temporal breakdown; the rules always look at the whole trace.")
@click.argument("trace", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@scope_options
@click.option("--chip", "chip", type=int, multiple=True, hidden=True)  # before --chips: repeatable, kept for scripts
@click.option("--per-chip", is_flag=True, help="Also report every chip's metrics.")
@click.option("--no-recommendations", is_flag=True, help="Skip the recommendation rules.")
def summary(trace: str, as_json: bool, chip: tuple[int, ...], per_chip: bool, no_recommendations: bool,
            **selection: Any) -> None:
    scope = pop_scope(selection)
    if chip:
        scope = replace(scope, chips=tuple(sorted(set(chip) | set(scope.chips or ()))))
    report = build_report(trace, scope, per_chip, not no_recommendations)
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
            cells = [format_metric(m[n], next(s.unit for s in METRICS if s.name == n)) for n, _ in columns]
            click.echo(f"  {chip:>4} " + " ".join(f"{c:>15}" for c in cells))


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")
