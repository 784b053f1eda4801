"""Connections from Qt objects to the view state's psygnal signals that end with the Qt object.

psygnal holds a bound-method slot weakly, so it only drops it when the Python wrapper goes.
A closed window's widgets are deleted on the C++ side while their wrappers can live on
(anything that still refers to them), and the `ViewState` can outlive the window too (a
worker's pending result holds it): a later emit then called into a deleted widget and
psygnal reported "Internal C++ object ... already deleted". `connect_while_alive`
disconnects the slot when its Qt object is destroyed.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject


def connect_while_alive(signal: Any, slot: Callable[..., Any], owner: QObject | None = None) -> None:
    """Connect a psygnal `signal` to `slot` (a bound method) until `owner` (default: the
    slot's own object, which must be a QObject) is destroyed."""
    owner = slot.__self__ if owner is None else owner
    if not isinstance(owner, QObject):
        raise TypeError(f"{slot!r} does not belong to a QObject: pass the owner whose lifetime it follows")
    signal.connect(slot)
    method = weakref.WeakMethod(slot)  # no strong reference: the connection must not keep its owner alive

    def disconnect(*_: object) -> None:
        live = method()
        if live is not None:  # (else psygnal has dropped it already)
            signal.disconnect(live)

    owner.destroyed.connect(disconnect)
