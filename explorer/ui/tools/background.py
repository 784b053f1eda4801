"""One worker thread for the power tools (queries, statistics), apart from the analyses' worker.

A long query must not hold up the summary or the operator tree (and a busy analysis
must not hold up a query), so the tools get their own single worker (`explorer.ui.worker`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from explorer.ui.worker import Worker

_worker = Worker("trnx-tools", "run this tool")


def run_tool(fn: Callable[[], Any], callback: Callable[[bool, Any], None]) -> Future:
    """Run `fn` on the tools' worker; `callback(ok, result or one-sentence message)` runs on the GUI thread."""
    return _worker.submit(fn, callback)
