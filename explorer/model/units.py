"""Human units for times, bytes, rates and counts (the labels every view shares)."""

from __future__ import annotations


def format_ns(ns: float, digits: int = 4) -> str:
    """1234567 -> '1.235 ms': the unit a person would pick."""
    a = abs(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if a >= scale:
            return f"{ns / scale:.{digits}g} {unit}"
    return f"{ns:.{digits}g} ns" if ns != int(ns) else f"{int(ns)} ns"


def format_bytes(n: float) -> str:
    a = abs(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if a >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def format_count(n: float) -> str:
    """12_300_000 -> '12.3 M' (FLOPs, instruction counts)."""
    a = abs(n)
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f}"


def plural(n: int, word: str) -> str:
    """1 -> '1 chip', 16 -> '16 chips' (thousands separated): the CLI and the panels count alike."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def format_rate_gbps(gbps: float) -> str:
    """GB/s (1 GB = 1e9 bytes), switching to TB/s above 1000."""
    return f"{gbps / 1000:.3g} TB/s" if abs(gbps) >= 1000 else f"{gbps:.4g} GB/s"
