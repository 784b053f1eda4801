"""The validation dataset: public measurements with their sources, and how to simulate each.

Read from `dataset.toml` beside this file (or any file of the same shape); every field is
checked on load so a malformed case fails with one sentence naming it, before anything runs.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcore.errors import ConfigError

DATASET = Path(__file__).with_name("dataset.toml")
KINDS = ("kernel", "collective", "end_to_end")
UNITS_NS = {"us": 1e3, "ms": 1e6, "s": 1e9}  # unit -> nanoseconds in one unit
MEASURES = ("duration", "collective", "dma")


@dataclass(frozen=True)
class Case:
    """One published figure and the capture that reproduces it."""

    id: str
    kind: str
    category: str
    hardware: str
    config: str
    measured: float
    unit: str
    metric: str
    source: str
    quote: str
    tolerance: float
    fit: bool
    sim: dict[str, Any]
    note: str = ""
    out_of_sample: bool = False
    fast: bool = True

    @property
    def measure(self) -> str:
        return str(self.sim.get("measure", "duration"))


@dataclass(frozen=True)
class Excluded:
    """A measurement that was found but cannot be used yet, with the reason."""

    what: str
    source: str
    why: str


@dataclass(frozen=True)
class Harness:
    """What a measurement's harness adds around the device's work (a host-timed call's host and
    runtime share), with the constant's value and where it comes from: cases name it under
    `sim.harness` and their capture runs with it as the step's host time (`runtime.host_step_ns`)."""

    name: str
    host_step_ns: float
    fitted: str


@dataclass(frozen=True)
class Dataset:
    cases: tuple[Case, ...]
    excluded: tuple[Excluded, ...] = field(default=())
    harnesses: tuple[Harness, ...] = field(default=())


_TEXT = ("id", "kind", "category", "hardware", "config", "unit", "metric", "source", "quote")


def _harness(name: str, raw: Any, where: str) -> Harness:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: harness '{name}' must be a table.")
    v = raw.get("host_step_ns")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ConfigError(f"{where}: harness '{name}' needs host_step_ns, a non-negative number of nanoseconds.")
    fitted = raw.get("fitted")
    if not isinstance(fitted, str) or not fitted.strip():
        raise ConfigError(f"{where}: harness '{name}' must say where its constant comes from ('fitted').")
    return Harness(name, float(v), fitted)


def _case(raw: dict[str, Any], where: str, harnesses: dict[str, Harness] | None = None) -> Case:
    for key in (*_TEXT, "measured", "tolerance", "fit", "sim"):
        if key not in raw:
            raise ConfigError(f"{where} lacks '{key}'.")
    for key in _TEXT:
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise ConfigError(f"{where}: '{key}' must be non-empty text.")
    name = f"{where} ('{raw['id']}')"
    if raw["kind"] not in KINDS:
        raise ConfigError(f"{name}: kind must be one of {', '.join(KINDS)}.")
    if raw["unit"] not in UNITS_NS:
        raise ConfigError(f"{name}: unit must be one of {', '.join(UNITS_NS)}.")
    for key in ("measured", "tolerance"):
        v = raw[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ConfigError(f"{name}: '{key}' must be a positive number.")
    if not raw["source"].startswith("https://"):
        raise ConfigError(f"{name}: 'source' must be an https URL.")
    sim = raw["sim"]
    if not isinstance(sim, dict) or not ("workload" in sim or "ops" in sim):
        raise ConfigError(f"{name}: 'sim' must be a table with a workload or ops.")
    if sim.get("measure", "duration") not in MEASURES:
        raise ConfigError(f"{name}: sim.measure must be one of {', '.join(MEASURES)}.")
    if "harness" in sim:
        h = (harnesses or {}).get(sim["harness"])
        if h is None:
            raise ConfigError(f"{name}: sim.harness '{sim['harness']}' is not a [harness.NAME] table of the dataset.")
        sim = {**sim, "host_step_ns": h.host_step_ns}
    out_of_sample = bool(raw.get("out_of_sample", False))
    if raw["kind"] == "end_to_end" and (raw["fit"] or not out_of_sample):
        raise ConfigError(f"{name}: end-to-end figures must be fit = false and out_of_sample = true.")
    return Case(id=raw["id"], kind=raw["kind"], category=raw["category"], hardware=raw["hardware"],
                config=raw["config"], measured=float(raw["measured"]), unit=raw["unit"], metric=raw["metric"],
                source=raw["source"], quote=raw["quote"], tolerance=float(raw["tolerance"]), fit=bool(raw["fit"]),
                sim=dict(sim), note=str(raw.get("note", "")), out_of_sample=out_of_sample,
                fast=bool(raw.get("fast", raw["kind"] != "end_to_end")))


def load_dataset(path: str | Path = DATASET) -> Dataset:
    """Parse and check a dataset file; ConfigError (one sentence) on anything malformed."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read validation dataset {p} ({exc.strerror}).") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"validation dataset {p} is not valid TOML ({str(exc).splitlines()[0]}).") from None
    raw_h = data.get("harness", {})
    if not isinstance(raw_h, dict):
        raise ConfigError(f"validation dataset {p.name}: [harness] must be a table of named tables.")
    harnesses = {n: _harness(n, h, p.name) for n, h in raw_h.items()}
    cases = tuple(_case(raw, f"{p.name} case {i + 1}", harnesses) for i, raw in enumerate(data.get("case", [])))
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise ConfigError(f"{p.name}: case id '{c.id}' appears twice.")
        seen.add(c.id)
    excluded = tuple(Excluded(str(e["what"]), str(e["source"]), str(e["why"])) for e in data.get("excluded", []))
    return Dataset(cases, excluded, tuple(harnesses.values()))
