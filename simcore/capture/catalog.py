"""What a capture can be asked for, for UIs (the GUI capture dialog, `trnx presets --json`)."""

from __future__ import annotations

from typing import Any

from simcore.capture.options import DEFAULT_CONTEXT, DETAILS, OPTIONS
from simcore.collectives.cost import ALGORITHMS
from simcore.hardware import load_hardware, preset_names
from simcore.topology import topology_of
from simcore.workloads import MICROBENCHMARKS, MODELS, PHASES


def choices() -> dict[str, Any]:
    """Hardware presets with their key figures, models, micro-benchmarks, phases, details,
    collective algorithms, and every capture option: `options` (name -> help), `defaults`
    (name -> the value applied when it is not given) and `option_specs` (the declarations)."""
    hardware = []
    for name in preset_names():
        hw = load_hardware(name)
        topo = topology_of(hw)
        hardware.append({
            "name": name, "description": hw.data.get("description", ""), "chips": hw.chips,
            "cores_per_chip": hw.cores_per_chip, "peak_tflops_per_core": dict(hw.tensor["peak_tflops"]),
            "hbm_gib": round(hw.hbm_capacity / 2**30, 1), "hbm_tbps": hw.hbm_bytes_per_ns / 1e3,
            "sbuf_mib_per_core": round(hw.sbuf_bytes / 2**20, 1), "dtypes": hw.matmul_dtypes(),
            "link_gbps": float(hw.data["link"]["bandwidth_gbps"]),
            "topology": None if topo.flat else topo.describe(),
        })
    models = [{"name": m.name, "display": m.display, "params_b": round(m.total_params() / 1e9, 2), "layers": m.layers,
               "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads, "max_position": m.max_position,
               "moe": None if m.moe is None else f"{m.moe.experts} experts, top-{m.moe.top_k}"
               + (f", {m.moe.shared_experts} shared" if m.moe.shared_experts else ""),
               "attention": "MLA" if m.mla else "GQA", "source": m.source} for m in MODELS.values()]
    micro = [{"name": k, "shape": v["shape"], "default": list(v["default"]), "help": v["help"]}
             for k, v in MICROBENCHMARKS.items()]
    defaults = {o.name: o.default for o in OPTIONS.values() if o.default is not None}
    specs = [{"name": o.name, "flag": o.flag, "short": o.short, "help": o.help, "kind": o.kind,
              "choices": list(o.choices) if o.choices else None, "default": o.default, "shown_default": o.shown_default,
              "group": o.group} for o in OPTIONS.values()]
    return {"hardware": hardware, "models": models, "microbenchmarks": micro, "phases": list(PHASES),
            "details": list(DETAILS), "cc_algorithms": list(ALGORITHMS),
            "options": {o.name: o.help for o in OPTIONS.values()}, "option_specs": specs,
            "defaults": dict(defaults, context_decode=DEFAULT_CONTEXT)}
