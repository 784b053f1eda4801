"""Background work that yields the disk and the cores to what the user waits for.

On Linux a thread's CPU niceness and its I/O priority are its own (not the process's), and
threads it starts afterwards inherit both: so the loader's thread lowers them before it
verifies a trace's checksums, and the hashing threads it starts run as low as it does. The
I/O class `idle` is served by the block layer's scheduler (mq-deadline, bfq) only when no
other request waits (with aging, so it is never starved for good); niceness 19 gives the
hashing's CPU to anything else runnable. Elsewhere (or when the kernel refuses) nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE = 2, 3
_IOPRIO_WHO_PROCESS = 1  # with id 0: the calling thread
_IOPRIO_CLASS_SHIFT = 13
_SYSCALLS = {"x86_64": (251, 252), "aarch64": (30, 31)}  # (ioprio_set, ioprio_get)


def _syscall(which: int, *args: int) -> int:
    numbers = _SYSCALLS.get(platform.machine()) if sys.platform == "linux" else None
    if numbers is None:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(ctypes.c_long(numbers[which]), *(ctypes.c_int(a) for a in args)))


def set_io_class(io_class: int, level: int = 0) -> bool:
    """Give the calling thread (and the threads it starts later) this I/O scheduling class; False
    where that is not possible."""
    return _syscall(0, _IOPRIO_WHO_PROCESS, 0, (io_class << _IOPRIO_CLASS_SHIFT) | level) == 0


def io_class() -> int | None:
    """The calling thread's I/O scheduling class (0: none set, which means best effort), or None."""
    got = _syscall(1, _IOPRIO_WHO_PROCESS, 0)
    return None if got < 0 else got >> _IOPRIO_CLASS_SHIFT


def set_niceness(nice: int) -> bool:
    """Set the calling thread's CPU niceness (Linux: per thread, inherited by threads it starts)."""
    if sys.platform != "linux":
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except OSError:
        return False
    return True


def niceness(main: bool = False) -> int | None:
    """The calling thread's CPU niceness (Linux), or None; `main`: the main (GUI) thread's."""
    if sys.platform != "linux":
        return None
    return os.getpriority(os.PRIO_PROCESS, os.getpid() if main else threading.get_native_id())


def yield_to_foreground() -> None:
    """Make the calling thread background work: the idle I/O class and niceness 19."""
    set_io_class(IOPRIO_CLASS_IDLE)
    set_niceness(19)
