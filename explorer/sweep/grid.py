"""A sweep's grid: `--grid KEY=V1,V2,...` over any declared capture option.

Keys and values go through the capture options' own declaration (simcore/capture/options.py):
a key is any `CaptureConfig` field that shapes the trace (not `workers` or `overwrite`), named
as its flag or its field (`compute-cores`, `--compute-cores`, `compute_cores`), and each value is
read by that option's `Option.parse`, so an option added there is a grid key with no change
here, with the same one-sentence errors as `trnx capture`. Values are separated by commas, or
by semicolons when a value has commas of its own (`shape=1024,1024,1024;4096,4096,4096`).

Configurations are the grid's product in the order given: the first `--grid` varies slowest.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simcore.capture.options import OPTIONS, Option
from simcore.errors import UserError

MAX_CONFIGURATIONS = 100_000


@dataclass(frozen=True)
class Axis:
    """One grid key: the option and its values, parsed, with the text each was given as."""

    option: Option
    values: tuple[Any, ...]
    texts: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.option.name

    def to_json(self) -> list:
        return [self.name, list(self.texts)]


@dataclass(frozen=True)
class Configuration:
    """One point of the grid: its index in grid order, its grid values and its key."""

    index: int
    values: dict[str, Any]     # grid option -> parsed value, in grid order
    texts: dict[str, str]      # grid option -> the text it was given as

    @property
    def key(self) -> str:
        """What identifies the configuration in results.parquet (for --resume)."""
        return config_key(self.values)

    def label(self) -> str:
        """tp=8 batch=1 dtype=bf16"""
        return " ".join(f"{k}={v}" for k, v in self.texts.items())


def config_key(values: Mapping[str, Any]) -> str:
    return json.dumps({k: _plain(v) for k, v in values.items()}, separators=(",", ":"))


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def grid_options(options: Mapping[str, Option] = OPTIONS) -> dict[str, Option]:
    """The options a grid may vary: every declared option that is recorded in the trace."""
    return {name: o for name, o in options.items() if o.recorded}


def option_named(key: str, options: Mapping[str, Option] = OPTIONS) -> Option:
    """The grid option `key` names (flag or field spelling), or a UserError listing them."""
    name = key.strip().lstrip("-").replace("-", "_")
    opt = options.get(name)
    if opt is None:
        known = ", ".join(o.flag[2:] for o in grid_options(options).values())
        raise UserError(f"unknown --grid key '{key}'; grid keys are capture options: {known}.")
    if not opt.recorded:
        raise UserError(f"--grid {opt.flag[2:]}: {opt.flag} does not change what a capture simulates, so it cannot "
                        "be a grid key.")
    return opt


def split_values(text: str) -> list[str]:
    sep = ";" if ";" in text else ","
    return [v.strip() for v in text.split(sep)]


def parse_axis(item: str, options: Mapping[str, Option] = OPTIONS) -> Axis:
    """`tp=8,16` -> Axis(tp, (8, 16)); UserError with one sentence for anything else."""
    key, sep, rest = str(item).partition("=")
    if not sep or not key.strip():
        raise UserError(f"--grid '{item}' is not KEY=V1,V2,... (e.g. --grid tp=8,16).")
    opt = option_named(key, options)
    texts = split_values(rest)
    if not rest.strip() or any(not t for t in texts):
        raise UserError(f"--grid {opt.flag[2:]} has an empty value; list values like {opt.flag[2:]}=A,B.")
    values = tuple(opt.parse(t) for t in texts)
    seen: dict[str, str] = {}
    for t, v in zip(texts, values):
        k = config_key({"v": v})
        if k in seen:
            hint = "" if ";" in rest else " (separate values with ';' when a value has commas of its own)"
            raise UserError(f"--grid {opt.flag[2:]} lists {seen[k]!r} twice; give each value once{hint}.")
        seen[k] = t
    return Axis(opt, values, tuple(texts))


def parse_grid(items: Iterable[str], fixed: Mapping[str, Any] | None = None,
               options: Mapping[str, Option] = OPTIONS) -> list[Axis]:
    """Every `--grid` item parsed, checked against each other and the fixed capture options."""
    axes: list[Axis] = []
    for item in items:
        axis = parse_axis(item, options)
        if any(a.name == axis.name for a in axes):
            raise UserError(f"--grid {axis.option.flag[2:]} is given twice; list all its values in one --grid.")
        if fixed and fixed.get(axis.name) is not None:
            raise UserError(f"{axis.option.flag} is both fixed and a --grid key; give it once.")
        axes.append(axis)
    if not axes:
        raise UserError("a sweep needs at least one --grid KEY=V1,V2,... (e.g. --grid tp=8,16).")
    n = 1
    for a in axes:
        n *= len(a.values)
    if n > MAX_CONFIGURATIONS:
        raise UserError(f"the grid has {n:,} configurations; at most {MAX_CONFIGURATIONS:,} are allowed "
                        "(split it into several sweeps).")
    return axes


def configurations(axes: Sequence[Axis]) -> list[Configuration]:
    """The grid's product, the first axis varying slowest."""
    out = []
    for i, combo in enumerate(itertools.product(*(range(len(a.values)) for a in axes))):
        out.append(Configuration(i, {a.name: a.values[j] for a, j in zip(axes, combo)},
                                 {a.name: a.texts[j] for a, j in zip(axes, combo)}))
    return out


__all__ = ["Axis", "Configuration", "config_key", "configurations", "grid_options", "parse_grid"]
