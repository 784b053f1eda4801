"""Plain-data helpers behind the capture dialog (no Qt): what a form field holds, the
options a finished trace was captured with ("Re-run with changes"), output names.

Validation itself is `simcore.capture.resolve`, the same code the CLI and the Python
API run, so the dialog shows the same one-sentence errors as `trnx capture`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from simcore.capture import CaptureConfig
from simcore.errors import ConfigError

# The fields the dialog lays out by hand; every other CaptureConfig field gets a generic
# editor, so options added to the simulator later show up without a dialog change.
KNOWN_FIELDS = ("hardware", "workload", "phase", "batch", "seq", "context", "shape", "dtype", "layers",
                "detail", "cores", "compute_cores", "seed", "overwrite")
INT_RE = re.compile(r"[+-]?\d+")
FLOAT_RE = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


def extra_fields() -> list[dataclasses.Field]:
    """CaptureConfig fields without a hand-built editor (e.g. multi-chip options)."""
    return [f for f in dataclasses.fields(CaptureConfig) if f.name not in KNOWN_FIELDS]


def field_kind(f: dataclasses.Field) -> str:
    """'bool', 'tristate' (bool | None: on, off or the simulator's default), 'int', 'float'
    or 'text': which editor a field gets (from its annotation)."""
    text = str(f.type).replace(" ", "")
    parts = set(text.split("|")) - {"None"}
    if parts == {"bool"}:
        return "tristate" if "None" in text.split("|") else "bool"
    if parts == {"int"}:
        return "int"
    if parts <= {"float", "int"} and parts:
        return "float"
    return "text"


def parse_value(text: str, kind: str = "int") -> Any:
    """Form text -> option value: '' is unset (None), numbers become numbers, anything else
    stays text so `resolve` rejects it with the CLI's sentence (e.g. '--batch must be ...')."""
    text = text.strip()
    if not text:
        return None
    if kind in ("int", "float") and INT_RE.fullmatch(text):
        return int(text)
    if kind == "float" and FLOAT_RE.fullmatch(text):
        return float(text)
    return text


def flag(name: str) -> str:
    """The `trnx capture` flag of a CaptureConfig field."""
    return "--" + name.replace("_", "-")


def format_value(value: Any) -> str:
    """An option value as form text (lists as '0,1,2')."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def check_output(out: Path, overwrite: bool) -> None:
    """The output-path checks `simcore.capture` makes before simulating (same sentences)."""
    if not str(out).strip() or str(out) == ".":
        raise ConfigError("capture needs an output path (-o NAME.trnx).")
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} already exists; choose another name or pass --overwrite.")
    if not out.parent.is_dir():
        raise ConfigError(f"cannot write {out}: directory {out.parent} does not exist.")


def options_from_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The capture options that produced a trace, read back from its meta.json.

    Raises ConfigError when the trace was not captured by simcore (e.g. an imported
    profile), since there is nothing to re-run.
    """
    sim = meta.get("simulator") or {}
    cap = meta.get("capture")
    wl = meta.get("workload") or {}
    hw = meta.get("hardware") or {}
    if not isinstance(cap, dict) or not sim.get("is_simulation") or not wl.get("name"):
        raise ConfigError("this trace was not captured by the simulator, so it has no capture options to re-run.")
    source = hw.get("source_file")
    hardware = source if source and Path(source).is_file() else hw.get("name", "trn3")
    workload = wl.get("source_file") or wl.get("name")
    out: dict[str, Any] = {"hardware": hardware, "workload": workload, "dtype": wl.get("dtype", "bf16"),
                           "seed": cap.get("seed", sim.get("seed", 0))}
    if wl.get("kind") == "microbenchmark":
        out["shape"] = format_value(wl.get("shape"))
    elif wl.get("source_file"):
        if cap.get("layers") is not None:
            out["layers"] = cap["layers"]
    else:
        phase = wl.get("phase", "decode")
        out["phase"] = phase
        out["batch"] = wl.get("batch")
        out["context"] = wl.get("context")
        if phase != "decode":
            out["seq"] = wl.get("seq")
        if wl.get("layers") is not None and wl.get("layers") != wl.get("total_layers"):
            out["layers"] = wl["layers"]
    out["detail"] = cap.get("detail", "kernel")
    if out["detail"] == "instruction":
        out["cores"] = format_value(cap.get("cores") or [0])
    if cap.get("compute_cores") is not None:
        out["compute_cores"] = cap["compute_cores"]
    # options the simulator grew later (multi-chip: chips, tp, ep, ...): wherever meta keeps them
    places = [cap, cap.get("parallelism") or {}, wl]
    for f in extra_fields():
        for place in places:
            if isinstance(place, dict) and place.get(f.name) is not None:
                out[f.name] = place[f.name]
                break
    _drop_derived(out, hw)
    return {k: v for k, v in out.items() if v is not None}


def _drop_derived(out: dict[str, Any], hw: dict[str, Any]) -> None:
    """Leave out values the simulator derived rather than the user chose (tp=1, chips = tp x dp
    x pp, ...), so changing one option in the re-run does not collide with a stale derived one."""
    from simcore.capture import choices

    defaults = choices().get("defaults", {})
    for key, value in defaults.items():
        if key in {f.name for f in extra_fields()} and out.get(key) == value:
            out.pop(key)
    tp, dp, pp = (int(out.get(k) or 1) for k in ("tp", "dp", "pp"))
    if out.get("chips") == tp * dp * pp:
        out.pop("chips")
    if out.get("dp") == 1:
        out.pop("dp")
    if out.get("microbatches") in (1, pp):
        out.pop("microbatches")
    if "sequence_parallel" in out and out["sequence_parallel"] == (out.get("phase") in ("prefill", "train") and tp > 1):
        out.pop("sequence_parallel")
    default_cc = 1 if out.get("shape") is not None else hw.get("cores_per_chip")
    if out.get("compute_cores") == default_cc:
        out.pop("compute_cores")


def suggest_name(options: dict[str, Any]) -> str:
    """A descriptive trace name for a set of options: 'llama3.1-8b-decode-bf16.trnx'."""
    workload = str(options.get("workload") or "capture")
    if workload.endswith(".json"):
        workload = Path(workload).stem
    parts = [workload]
    if options.get("phase"):
        parts.append(str(options["phase"]))
    if options.get("shape"):
        parts.append(re.sub(r"[^0-9]+", "x", str(options["shape"])).strip("x"))
    parts.append(str(options.get("dtype") or "bf16"))
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)) + ".trnx"


def free_path(directory: Path, name: str) -> Path:
    """`directory/name`, or name-2, name-3, ... when taken."""
    path = directory / name
    stem = name[:-5] if name.endswith(".trnx") else name
    n = 2
    while path.exists():
        path = directory / f"{stem}-{n}.trnx"
        n += 1
    return path
