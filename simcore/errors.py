"""Errors a user can cause (bad input), as opposed to bugs, and the one sentence for each.

Every `UserError` message is one sentence a user can act on. The CLI prints it on
stderr and exits with code 2; the GUI shows it in an error dialog. `describe` turns
the few other exceptions a user's input or machine can cause (out of memory, input
nested too deeply, an integer too long to read, an unwritable file) into a sentence of
the same kind, so the CLI and every GUI dialog say the same thing. Anything else is a
bug: the CLI keeps its traceback, the GUI shows one sentence saying so and prints the
traceback on stderr.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


MiB = 1 << 20


LONG_INTEGER = f"holds an integer of more than {sys.get_int_max_str_digits():,} digits, which no field of it can need."


class UserError(Exception):
    """Bad input: the message is one clear sentence, shown without a traceback."""


class TraceFormatError(UserError):
    """A trace on disk is missing, unreadable, malformed or from a newer format."""


class ConfigError(UserError):
    """A hardware preset, workload or capture option is invalid."""


def size_text(n: float, up: bool = False) -> str:
    """Bytes as a short human figure: 512 MiB, 1.5 GiB (`up`: rounded up, for a need)."""
    import math

    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            step = 0.1 if value < 10 else 1
            if up:
                value = math.ceil(value / step - 1e-9) * step
            return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"
    return f"{int(n)} bytes"


def path_bytes(path: str | Path) -> int:
    """Size of a file, or of every file under a directory (0 when it cannot be read)."""
    try:
        p = Path(path)
        if p.is_file():
            return p.stat().st_size
        if p.is_dir():
            return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    except (OSError, ValueError):
        pass
    return 0


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


def address_space_limit() -> int | None:
    """This process's address-space limit in bytes (`ulimit -v`, `prlimit --as`), or None."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


@dataclass(frozen=True)
class MemoryNeed:
    """What a command needs for an input of a given size: a fixed part (the interpreter, numpy,
    Arrow) plus a multiple of the input, as resident memory and as address space (which also
    counts the memory-mapped trace and the allocator's per-thread reservations). Measured in
    docs/PERFORMANCE.md ("Memory under a limit")."""

    base_rss: int
    per_input_rss: float
    base_as: int
    per_input_as: float

    def bytes_for(self, input_bytes: int) -> int:
        """Resident memory, or address space when the process runs under an address-space limit."""
        if address_space_limit() is not None:
            return int(self.base_as + self.per_input_as * input_bytes)
        return int(self.base_rss + self.per_input_rss * input_bytes)


def memory_sentence(exc: BaseException | None, doing: str, need_bytes: int | None = None,
                    advice: str = "free memory or use a machine with more") -> str:
    """Out of memory while `doing` something: how much it needs, as far as anyone knows.

    `need_bytes` is the caller's estimate of the whole need (MemoryNeed.bytes_for its input);
    numpy and Arrow also say how large the allocation that failed was."""
    failed = getattr(exc, "_total_size", None)  # numpy's _ArrayMemoryError: the bytes it asked for
    parts = []
    limit = address_space_limit()
    if need_bytes and limit is not None and need_bytes > limit:
        parts.append(f"it needs about {size_text(need_bytes, up=True)} of address space and runs under a limit of {size_text(limit)}")
    elif limit is not None:
        parts.append(f"it needs more address space than its limit of {size_text(limit)}")
    elif need_bytes:
        parts.append(f"it needs about {size_text(need_bytes, up=True)} of free memory")
    if isinstance(failed, int) and failed > 0:
        parts.append(f"an allocation of {size_text(failed)} failed")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"not enough memory to {doing}{detail}; {advice}."


def near_memory_limit(margin: int = 256 << 20) -> bool:
    """Whether this process has come within `margin` bytes of its address-space limit
    (`ulimit -v`, `prlimit --as`). Under such a limit, running out shows up not only as
    MemoryError but as whatever fails to map memory first: a thread that cannot start, a
    shared library that cannot load, an interpreter SystemError."""
    soft = address_space_limit()
    if soft is None:
        return False
    try:
        with open("/proc/self/status") as fh:
            peak = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmPeak:"))
    except (OSError, StopIteration, ValueError):
        return False
    return peak + margin > soft


def out_of_memory(exc: BaseException) -> bool:
    """MemoryError, or another failure that happened at the process's memory limit."""
    return isinstance(exc, MemoryError) or (isinstance(exc, Exception) and near_memory_limit())


def user_caused(exc: BaseException) -> bool:
    """True for exceptions bad input or the machine causes (describe gives their sentence)."""
    if isinstance(exc, (UserError, MemoryError, RecursionError, OSError)) or out_of_memory(exc):
        return True
    if isinstance(exc, UnicodeEncodeError) and "surrogate" in str(exc):
        return True
    return isinstance(exc, ValueError) and "integer string conversion" in str(exc)


def describe(exc: BaseException, doing: str = "do this", need_bytes: int | None = None) -> str:
    """One sentence for any exception, naming what was being done (`doing`: "open the trace").

    User-caused exceptions (`user_caused`) get a sentence a user can act on; a bug gets a
    sentence that says it is one, without the raw exception text."""
    if isinstance(exc, UserError):
        return str(exc)
    if out_of_memory(exc):
        return memory_sentence(exc, doing, need_bytes)
    if isinstance(exc, RecursionError):
        return f"cannot {doing}: its input nests too deeply (more than {sys.getrecursionlimit():,} levels)."
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot access{where}: {(exc.strerror or _first_line(exc)).rstrip('.')}."
    if isinstance(exc, UnicodeEncodeError) and "surrogate" in str(exc):
        return f"cannot {doing}: its input holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text."
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        return f"cannot {doing}: its input {LONG_INTEGER}"
    return (f"an internal error ({type(exc).__name__}) stopped the attempt to {doing}; "
            "this is a bug in trn3-explorer, please report it with the details printed on stderr.")
