"""Imbalance that real systems have: per-rank jitter and injected stragglers (seeded).

- `--jitter 2%`: every stretch of compute a rank does between two collectives takes
  (1 + x) times its simulated time, x drawn half-normal with scale 2% per rank and stretch
  (OS noise, clock and thermal variation only ever slow a chip down, so a jittered kernel
  never beats its roofline).
- `--straggler chip=5,slowdown=1.3`: chip 5 computes 1.3x slower all step (a throttled or
  degraded chip); `--straggler chip=5,delay=200us`: chip 5 starts the step 200 us late (a
  preempted host thread). Several `--straggler` options may be given (or one text with
  `;` between them, as meta.json keeps them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.errors import ConfigError

MAX_JITTER = 0.5
_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class Straggler:
    chip: int
    slowdown: float = 1.0
    delay_ns: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"chip": self.chip, "slowdown": self.slowdown, "delay_ns": self.delay_ns}

    def to_text(self) -> str:
        """The option text that gives this straggler back (`--straggler`)."""
        out = f"chip={self.chip}"
        if self.slowdown != 1.0:
            out += f",slowdown={self.slowdown:g}"
        if self.delay_ns:
            out += f",delay={self.delay_ns:g}ns"
        return out


def parse_jitter(value: Any) -> float:
    """'2%', '0.02' or 0.02 -> 0.02."""
    if value is None:
        return 0.0
    text = str(value).strip()
    try:
        x = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise ConfigError(f"--jitter '{value}' must be a percentage like 2% or a fraction like 0.02.") from None
    if isinstance(value, bool) or not np.isfinite(x) or not 0 <= x <= MAX_JITTER:
        raise ConfigError(f"--jitter '{value}' must be between 0% and {MAX_JITTER:.0%}.")
    return x


def _duration(text: str, original: str) -> float:
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ns|us|ms|s)?", text.strip().lower())
    if not m:
        raise ConfigError(f"--straggler '{original}': delay '{text}' must be a time like 200us, 1.5ms or 5000 (ns).")
    return float(m.group(1)) * _UNITS[m.group(2) or "ns"]


def parse_straggler(value: Any, chips: int) -> Straggler:
    """'chip=5,slowdown=1.3' or 'chip=5,delay=200us' (or a dict with those keys)."""
    if isinstance(value, Straggler):
        fields = value.to_dict()
        original = str(fields)
    elif isinstance(value, dict):
        fields = dict(value)
        original = str(value)
    elif isinstance(value, str):
        original = value
        fields = {}
        for part in value.split(","):
            if not part.strip():
                continue
            key, sep, val = part.partition("=")
            if not sep:
                raise ConfigError(f"--straggler '{value}' must look like chip=5,slowdown=1.3 or chip=5,delay=200us.")
            fields[key.strip().lower()] = val.strip()
    else:
        raise ConfigError(f"--straggler {value!r} must look like chip=5,slowdown=1.3 or chip=5,delay=200us.")
    unknown = sorted(set(fields) - {"chip", "slowdown", "delay", "delay_ns"})
    if unknown:
        raise ConfigError(f"--straggler '{original}': unknown key '{unknown[0]}'; use chip, slowdown and delay.")
    if "chip" not in fields:
        raise ConfigError(f"--straggler '{original}' needs chip=N.")
    try:
        chip = int(str(fields["chip"]))
    except ValueError:
        raise ConfigError(f"--straggler '{original}': chip must be an integer.") from None
    if not 0 <= chip < chips:
        raise ConfigError(f"--straggler chip {chip} does not exist: the capture has chips 0..{chips - 1}.")
    try:
        slowdown = float(str(fields.get("slowdown", 1.0)))
    except ValueError:
        raise ConfigError(f"--straggler '{original}': slowdown must be a number like 1.3.") from None
    if not np.isfinite(slowdown) or not 1.0 <= slowdown <= 100.0:
        raise ConfigError(f"--straggler '{original}': slowdown must be between 1 and 100 (1.3 = 30% slower).")
    if "delay_ns" in fields:
        delay = float(fields["delay_ns"])
    else:
        delay = _duration(str(fields.get("delay", "0")), original)
    if not np.isfinite(delay) or delay < 0 or delay > 1e12:
        raise ConfigError(f"--straggler '{original}': delay must be between 0 and 1000 s.")
    if slowdown == 1.0 and delay == 0.0:
        raise ConfigError(f"--straggler '{original}' needs slowdown=X (> 1) or delay=T.")
    return Straggler(chip, slowdown, delay)


def parse_stragglers(value: Any, chips: int) -> list[Straggler]:
    if value is None or value == "" or value == []:
        return []
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    items = [part for v in items for part in (v.split(";") if isinstance(v, str) else [v])
             if not (isinstance(part, str) and not part.strip())]  # "a;b" holds several
    out = [parse_straggler(v, chips) for v in items]
    seen = [s.chip for s in out]
    if len(set(seen)) != len(seen):
        raise ConfigError("--straggler names the same chip twice; give each chip's slowdown and delay in one option.")
    return out


def compute_factors(ranks: int, segments: int, jitter: float, stragglers: list[Straggler],
                    seed: int, chip_of: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ranks, segments) time factors for each stretch of compute, and each rank's start delay (ns).
    A straggler is a chip: every rank on it (`chip_of[rank]`) is slowed or delayed."""
    f = np.ones((ranks, max(segments, 1)))
    if jitter > 0:
        rng = np.random.default_rng([int(seed), 0x717E5])
        f += jitter * np.abs(rng.standard_normal(f.shape))
    delay = np.zeros(ranks)
    chip_of = np.arange(ranks) if chip_of is None else np.asarray(chip_of)
    for s in stragglers:
        on = chip_of == s.chip
        f[on] *= s.slowdown
        delay[on] += s.delay_ns
    return f, delay
