"""The selection's own worker: what a click or a jump shows beyond the event's own fields.

An event's dependencies (a pass over the flows), its kernel's details and the operator
tree's rows under that kernel each take tens of ms at 28M events: done on the GUI thread
they froze the window for up to a second after a deep link or a search. They run here, one
thread apart from the analyses (which take a minute after a big trace opens) and the tools
(a long query), so a click is answered while either is busy. Each panel submits through a
`Latest` of its own, so a result for a selection the user has since left is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from explorer.ui.worker import Latest, Worker

_worker = Worker("trnx-selection", "show this selection")


def run_for_selection(fn: Callable[[], Any], callback: Callable[[bool, Any], None]) -> Future:
    """Run `fn` on the selection's worker; `callback(ok, result or message)` runs on the GUI thread."""
    return _worker.submit(fn, callback)


def latest() -> Latest:
    """A `Latest` on the selection's worker (one per kind of result a panel waits for)."""
    return Latest(run_for_selection)
