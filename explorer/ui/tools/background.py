"""One worker thread for the power tools (queries, statistics), apart from the analyses' worker.

A long query must not hold up the summary or the operator tree (and a busy analysis
must not hold up a query), so the tools get their own single worker; results come
back on the GUI thread through a Qt signal, never touching widgets off it.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Signal

from simcore.errors import UserError


class _Bridge(QObject):
    finished = Signal(object)  # (callback, ok, value)


_bridge: _Bridge | None = None
_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _deliver(item: tuple[Callable[[bool, Any], None], bool, Any]) -> None:
    callback, ok, value = item
    try:
        callback(ok, value)
    except RuntimeError as exc:  # the receiving widget was closed meanwhile
        if "deleted" not in str(exc):
            raise


def run_tool(fn: Callable[[], Any], callback: Callable[[bool, Any], None]) -> Future:
    """Run `fn` on the tools' worker; `callback(ok, result or one-sentence message)` runs on the GUI thread."""
    global _bridge, _executor
    with _lock:
        if _bridge is None:
            _bridge = _Bridge()
            _bridge.finished.connect(_deliver)
            _executor = ThreadPoolExecutor(1, thread_name_prefix="trnx-tools")
    bridge = _bridge

    def work() -> None:
        try:
            value, ok = fn(), True
        except UserError as exc:
            value, ok = str(exc), False
        except MemoryError:
            value, ok = "not enough memory for this.", False
        except Exception as exc:  # a bug: keep the traceback, keep the app up
            traceback.print_exc(file=sys.stderr)
            value, ok = f"it failed ({type(exc).__name__}: {exc}).", False
        bridge.finished.emit((callback, ok, value))

    return _executor.submit(work)
