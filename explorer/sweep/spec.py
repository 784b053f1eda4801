"""What a sweep runs: the fixed capture options, the grid, and each configuration's full options.

A `SweepSpec` is recorded in the sweep directory (sweep.json) so `--resume` can check it is
finishing the same sweep, and so a sweep's rows can be captured again later (the GUI opens a
configuration's trace, capturing it when it was not kept).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from explorer.sweep.grid import Axis, Configuration, configurations, parse_grid
from simcore.capture.options import OPTIONS
from simcore.errors import UserError

_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
MAX_SLUG = 80


@dataclass
class SweepSpec:
    fixed: dict[str, Any]          # capture options given outside the grid (not None), plain JSON
    axes: list[Axis]
    _configs: list[Configuration] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, fixed: Mapping[str, Any], grid: Sequence[str]) -> "SweepSpec":
        given = {k: _plain(v) for k, v in fixed.items() if v is not None and v != [] and v != ()}
        unknown = sorted(set(given) - set(OPTIONS))
        if unknown:
            raise UserError(f"unknown capture option '{unknown[0]}'.")
        how = sorted(k for k in given if not OPTIONS[k].recorded)
        if how:
            raise UserError(f"{OPTIONS[how[0]].flag} is not an option of a sweep's captures (each configuration runs "
                            "in one process and writes a new trace).")
        return cls(given, parse_grid(grid, given))

    @property
    def configurations(self) -> list[Configuration]:
        if self._configs is None:
            self._configs = configurations(self.axes)
        return self._configs

    def options(self, config: Configuration) -> dict[str, Any]:
        """The capture options of one configuration: the fixed ones with its grid values on top."""
        return {**self.fixed, **{k: _plain(v) for k, v in config.values.items()}}

    def grid_texts(self) -> list[str]:
        """The --grid items as given (to record and to compare on --resume)."""
        return [f"{a.option.flag[2:]}={(';' if any(',' in t for t in a.texts) else ',').join(a.texts)}"
                for a in self.axes]

    def to_json(self) -> dict[str, Any]:
        return {"fixed": self.fixed, "grid": self.grid_texts()}

    @classmethod
    def from_json(cls, data: Any) -> "SweepSpec":
        if not isinstance(data, Mapping) or not isinstance(data.get("fixed"), Mapping) \
                or not isinstance(data.get("grid"), list) or not all(isinstance(g, str) for g in data["grid"]):
            raise UserError("sweep.json has no valid 'fixed' options and 'grid'; it was not written by trnx sweep.")
        return cls.build(data["fixed"], data["grid"])

    def same_as(self, other: "SweepSpec") -> bool:
        return self.to_json() == other.to_json()

    def trace_name(self, config: Configuration) -> str:
        """`0007-tp=8-batch=1.trnx`: the configuration's index (unique) and its grid values."""
        slug = _UNSAFE.sub("_", "-".join(f"{k}={t}" for k, t in config.texts.items()))[:MAX_SLUG].strip("._-")
        return f"{config.index:04d}-{slug}.trnx"


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        return v.item()
    return v
