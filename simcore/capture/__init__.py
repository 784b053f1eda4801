"""`simcore.capture(...)`: simulate a workload on a hardware preset and write a trace.

    >>> import simcore
    >>> simcore.capture(workload="gemm", shape="4096,4096,4096", dtype="mxfp8", out_path="gemm.trnx")

Options are validated first (the same one-sentence errors as `trnx capture`), the run is
deterministic for a seed, and the write is atomic: cancelling (`cancel.set()`) or any
failure leaves nothing at `out_path`.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

from simcore.capture.cancel import CaptureCancelled, Progress
from simcore.capture.options import CaptureConfig
from simcore.errors import ConfigError, UserError


def capture(config: CaptureConfig | dict[str, Any] | None = None, out_path: str | os.PathLike[str] | None = None, *,
            progress: Progress | None = None, cancel: Any = None, compression: str | None = None,
            runner: Any = None, observer: Any = None, **options: Any) -> Path:
    """Run a capture and write `out_path` (a NAME.trnx directory); returns its path.

    `config` is a CaptureConfig or a dict of options; keyword options override it (the
    fields of CaptureConfig, declared in simcore/capture/options.py; docs/simulator.md lists them).
    `progress(fraction, message)` is called as ops finish; `cancel` is anything with
    `is_set()` (e.g. threading.Event). `runner` runs a multi-chip capture's chip simulations
    elsewhere (an object with `map(fn, tasks, done)`, e.g. over Ray or Dask; see
    simcore.capture.multichip.runner); by default they run here or on local worker processes.
    `observer(table, chip, batch)` sees every batch as it is written (TraceWriter.observer).
    """
    from simcore.capture.config import resolve
    from simcore.capture.engine import capture_to
    from simcore.trace.target import check_target

    if out_path is None:
        raise ConfigError("capture needs an output path (-o NAME.trnx).")
    cfg = CaptureConfig.from_kwargs(config, **options)
    res = resolve(cfg)
    out = Path(out_path)
    try:
        check_target(out, cfg.overwrite)   # refused before simulating; checked again when written
    except UserError as exc:
        raise ConfigError(str(exc)) from None
    return capture_to(res, out, progress, cancel, compression, runner, observer)


def __getattr__(name: str) -> Any:
    """The simulator itself loads on first use, so reading the option declarations (`trnx capture
    --help`, the capture dialog) does not import the scheduler or the trace writer."""
    if name == "choices":
        from simcore.capture.catalog import choices

        return choices
    if name in ("resolve", "Resolved"):
        from simcore.capture import config

        return getattr(config, name)
    if name in ("simulate", "capture_to"):
        from simcore.capture import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """Lets `simcore.capture(...)` call `capture` although `simcore.capture` is this package."""

    def __call__(self, *args: Any, **kwargs: Any) -> Path:
        return capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["CaptureCancelled", "CaptureConfig", "Progress", "Resolved", "capture", "choices", "resolve", "simulate"]
