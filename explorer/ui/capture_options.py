"""Plain-data helpers behind the capture dialog (no Qt): what a form field holds, the
options a finished trace was captured with ("Re-run with changes"), output names.

Validation itself is `simcore.capture.resolve`, the same code the CLI and the Python
API run, so the dialog shows the same one-sentence errors as `trnx capture`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from simcore.capture import CaptureConfig
from simcore.capture.options import Option, declared
from simcore.errors import ConfigError

INT_RE = re.compile(r"[+-]?\d+")
FLOAT_RE = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


def capture_options() -> list[Option]:
    """The capture options the dialog edits: every CaptureConfig field, as simcore declares it."""
    return declared(CaptureConfig)


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


def format_value(value: Any) -> str:
    """An option value as form text (lists as '0,1,2')."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def tooltip(opt: Option) -> str:
    """`--flag: help`, what every editor of an option shows on hover."""
    return opt.flag + (f": {opt.help}" if opt.help else "")


def check_output(out: Path, overwrite: bool) -> None:
    """The output-path checks `simcore.capture` makes before simulating (same sentences)."""
    from simcore.trace.target import check_target

    if not str(out).strip() or str(out) == ".":
        raise ConfigError("capture needs an output path (-o NAME.trnx).")
    check_target(out, overwrite)   # replace only a trace trnx wrote (docs/trace-format.md)


def options_from_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The capture options that produced a trace, read back from its meta.json: the options
    given (`capture.options`), with the hardware and workload files located and a model's
    resolved shape (phase, batch, context, seq) filled in so the form shows what ran.

    Raises ConfigError when the trace was not captured by simcore (e.g. an imported
    profile), since there is nothing to re-run.
    """
    sim = meta.get("simulator") or {}
    cap = meta.get("capture")
    wl = meta.get("workload") or {}
    hw = meta.get("hardware") or {}
    if not isinstance(cap, dict) or not sim.get("is_simulation") or not wl.get("name"):
        raise ConfigError("this trace was not captured by the simulator, so it has no capture options to re-run.")
    given = cap.get("options")
    out: dict[str, Any] = dict(given) if isinstance(given, dict) else _older_trace_options(cap, wl)
    source = hw.get("source_file")
    out["hardware"] = source if source and Path(source).is_file() else hw.get("name", out.get("hardware"))
    out["workload"] = wl.get("source_file") or wl.get("name")
    if wl.get("kind") == "model":
        out.update(phase=wl.get("phase"), batch=wl.get("batch"), context=wl.get("context"))
        if wl.get("phase") != "decode":
            out["seq"] = wl.get("seq")
    known = {o.name for o in capture_options()}
    return {k: v for k, v in out.items() if v is not None and k in known and k != "overwrite"}


def _older_trace_options(cap: dict[str, Any], wl: dict[str, Any]) -> dict[str, Any]:
    """A trace captured before meta.json kept the options given: the options its meta names.
    Values the simulator may have derived (chips, compute cores, microbatches, sequence
    parallelism) cannot be told from given ones there, so they are left to the simulator."""
    out: dict[str, Any] = {"dtype": wl.get("dtype"), "seed": cap.get("seed"), "detail": cap.get("detail")}
    if wl.get("kind") == "microbenchmark":
        out["shape"] = format_value(wl.get("shape"))
    elif wl.get("layers") is not None and wl.get("layers") != wl.get("total_layers"):
        out["layers"] = wl["layers"]
    if out["detail"] == "instruction":
        out["cores"] = format_value(cap.get("cores") or [0])
    maybe_derived = {"chips", "compute_cores", "layers", "microbatches", "sequence_parallel"}
    for opt in capture_options():
        for place in (cap, cap.get("parallelism") or {}):
            value = place.get(opt.name)
            if opt.name not in out and opt.name not in maybe_derived and value not in (None, opt.default):
                out[opt.name] = value
    return out


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
    if options.get("dtype"):  # an op graph's own dtype (not given) is not in the name
        parts.append(str(options["dtype"]))
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
