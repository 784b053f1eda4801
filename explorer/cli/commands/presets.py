"""`trnx presets`: the hardware presets, models and micro-benchmarks a capture can use."""

from __future__ import annotations

import json

import click


def preset_facts() -> dict:
    """Everything `trnx presets` prints, as plain data (also what `--json` emits)."""
    from simcore.capture import choices

    return choices()


@click.command(help="List hardware presets, models and micro-benchmarks for `trnx capture`.")
@click.option("--json", "as_json", is_flag=True, help="Print the lists as JSON.")
def presets(as_json: bool) -> None:
    facts = preset_facts()
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    click.echo("hardware presets (--hardware NAME, or a .toml file with base = \"NAME\")")
    w = max((len(h["name"]) for h in facts["hardware"]), default=0)  # one column however long the names
    for h in facts["hardware"]:
        click.echo(f"  {h['name']:<{w}} {h['cores_per_chip']} cores, BF16 {h['peak_tflops_per_core']['bf16']:g} TFLOPS/core, "
                   f"HBM {h['hbm_gib']:g} GiB at {h['hbm_tbps']:g} TB/s, dtypes {', '.join(h['dtypes'])}")
        topo = h.get("topology")
        if topo:  # multi-chip systems: chips and link tiers (per chip, per direction)
            tiers = ", ".join(f"{t['name']} {t['bandwidth_gbps']:g} GB/s" for t in topo["tiers"])
            click.echo(f"  {'':<{w}} {h['chips']} chips, {topo['kind']}: {tiers}")
    click.echo("models (--workload NAME --phase prefill|decode|train)")
    w = max((len(m["name"]) for m in facts["models"]), default=0)
    for m in facts["models"]:
        extra = f", MoE {m['moe']}" if m["moe"] else ""
        click.echo(f"  {m['name']:<{w}} {m['params_b']:>7.2f}B params, {m['layers']} layers, {m['attention']}{extra}")
    click.echo("micro-benchmarks (--workload NAME --shape ...)")
    w = max((len(b["name"]) for b in facts["microbenchmarks"]), default=0)
    ws = max((len(b["shape"]) for b in facts["microbenchmarks"]), default=0)
    for b in facts["microbenchmarks"]:
        click.echo(f"  {b['name']:<{w}} --shape {b['shape']:<{ws}} {b['help']}")
    click.echo("op graphs: --workload FILE.json (see docs/simulator.md)")
