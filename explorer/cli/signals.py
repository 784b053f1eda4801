"""SIGTERM handled like Ctrl+C by the commands that write (capture, import, export).

A plain SIGTERM would end the process on the spot and leave its hidden temporaries behind
(up to the size of the trace). Raised as `Terminated` (a KeyboardInterrupt) instead, it runs
the same cleanup as Ctrl+C -- the trace writer and atomic writes remove their temporaries --
and `trnx` exits with 143 (128 + SIGTERM) after one line. Only around those commands:
`trnx view` runs Qt's event loop, where a Python handler would wait for the next Python call.
A SIGKILL cannot be caught; what it leaves is removed by the next write into that directory
(simcore.tempfiles).
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from typing import Any

EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwind like Ctrl+C, then exit with EXIT_TERMINATED."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def sigterm_like_ctrl_c(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command's function: while it runs, SIGTERM raises Terminated."""
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return command(*args, **kwargs)  # signals are only delivered to the main thread
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            return command(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)
    return run
