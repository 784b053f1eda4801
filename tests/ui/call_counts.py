"""Count calls into chosen Python functions while a GUI action runs.

A profile hook, not a patch: patching a PySide virtual (a model's `data`, `index`) outlives the test
in the C++ object, and a hook sees calls Qt makes into Python as well as ours."""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable


def count_calls(watched: dict[Callable, str], action: Callable[[], object]) -> tuple[object, collections.Counter[str]]:
    """Run `action()`; return its result and how many times each watched function was entered, by name."""
    codes = {f.__code__: name for f, name in watched.items()}
    calls: collections.Counter[str] = collections.Counter()

    def hook(frame, event, _arg) -> None:
        if event == "call" and frame.f_code in codes:
            calls[codes[frame.f_code]] += 1

    sys.setprofile(hook)
    try:
        result = action()
    finally:
        sys.setprofile(None)
    return result, calls
