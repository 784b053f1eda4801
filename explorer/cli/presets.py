"""`trnx presets`: the hardware presets, models and micro-benchmarks a capture can use."""

from __future__ import annotations

import json

import click


def preset_facts() -> dict:
    """Everything `trnx presets` prints, as plain data (also what `--json` emits)."""
    from simcore.hardware import load_hardware, preset_names
    from simcore.workloads import MICROBENCHMARKS, MODELS

    hardware = []
    for name in preset_names():
        hw = load_hardware(name)
        hardware.append({
            "name": name,
            "description": hw.data.get("description", ""),
            "chips": hw.chips,
            "cores_per_chip": hw.cores_per_chip,
            "peak_tflops_per_core": hw.tensor["peak_tflops"],
            "hbm_gib": round(hw.hbm_capacity / 2**30, 1),
            "hbm_tbps": hw.hbm_bytes_per_ns / 1e3,
            "sbuf_mib_per_core": round(hw.sbuf_bytes / 2**20, 1),
            "dtypes": hw.matmul_dtypes(),
        })
    models = [{"name": m.name, "display": m.display, "params_b": round(m.total_params() / 1e9, 2), "layers": m.layers,
               "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
               "moe": None if m.moe is None else f"{m.moe.experts} experts, top-{m.moe.top_k}"
               + (f", {m.moe.shared_experts} shared" if m.moe.shared_experts else ""),
               "attention": "MLA" if m.mla else "GQA", "source": m.source} for m in MODELS.values()]
    micro = [{"name": k, "shape": v["shape"], "default": list(v["default"]), "help": v["help"]}
             for k, v in MICROBENCHMARKS.items()]
    return {"hardware": hardware, "models": models, "microbenchmarks": micro}


@click.command(help="List hardware presets, models and micro-benchmarks for `trnx capture`.")
@click.option("--json", "as_json", is_flag=True, help="Print the lists as JSON.")
def presets(as_json: bool) -> None:
    facts = preset_facts()
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    click.echo("hardware presets (--hardware NAME, or a .toml file with base = \"NAME\")")
    for h in facts["hardware"]:
        click.echo(f"  {h['name']:<8} {h['cores_per_chip']} cores, BF16 {h['peak_tflops_per_core']['bf16']:g} TFLOPS/core, "
                   f"HBM {h['hbm_gib']:g} GiB at {h['hbm_tbps']:g} TB/s, dtypes {', '.join(h['dtypes'])}")
    click.echo("models (--workload NAME --phase prefill|decode|train)")
    for m in facts["models"]:
        extra = f", MoE {m['moe']}" if m["moe"] else ""
        click.echo(f"  {m['name']:<16} {m['params_b']:>7.2f}B params, {m['layers']} layers, {m['attention']}{extra}")
    click.echo("micro-benchmarks (--workload NAME --shape ...)")
    for b in facts["microbenchmarks"]:
        click.echo(f"  {b['name']:<10} --shape {b['shape']:<14} {b['help']}")
    click.echo("op graphs: --workload FILE.json (see docs/simulator.md)")
