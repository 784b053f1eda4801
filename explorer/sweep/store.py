"""The sweep directory: sweep.json (what runs), results.parquet (what finished), traces/ (kept).

    sweep/
      sweep.json        {"format": "trnx-sweep", "id": ..., "fixed": {...}, "grid": ["tp=8,16", ...]}
      results.parquet   one row per finished configuration (explorer.sweep.results)
      traces/           0007-tp=8-batch=1.trnx ... with --keep-traces

The tool never removes or overwrites what it did not create (docs/trace-format.md, "File
safety"): `-o` must be new, empty, or a sweep directory trnx wrote; results.parquet is
replaced atomically and only inside such a directory; a trace already at a kept trace's name
is reused when it is that configuration's own (explorer.sweep.traces), else left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import simcore
from explorer.sweep.results import RESULTS_FILE, read_rows, write_results
from explorer.sweep.spec import SweepSpec
from explorer.sweep.task import SWEEP_FILE
from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.trace.schema import META_FILE
from simcore.trace.target import check_not_in_trace

FORMAT = "trnx-sweep"
TRACES = "traces"
_SWEEP_FILE_LIMIT = 16 << 20


def read_sweep_file(directory: Path) -> dict[str, Any] | None:
    """sweep.json of a sweep directory trnx wrote, or None when there is none (UserError when
    there is one that is not ours)."""
    f = directory / SWEEP_FILE
    if not f.is_file():
        return None
    try:
        if f.stat().st_size > _SWEEP_FILE_LIMIT:
            raise ValueError("too large")
        data = json.loads(f.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"cannot read {f} ({exc}); it is not a sweep trnx wrote.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("id"), str):
        raise UserError(f"{f} is not a sweep file of trnx; choose another directory (-o).")
    return data


def is_sweep_path(path: str | os.PathLike[str]) -> bool:
    """Does `path` look like a sweep rather than a trace: a directory holding sweep.json or
    results.parquet (and no trace's meta.json), or a sweep's results.parquet? What lets `trnx
    view SWEEP_DIR` and the window's File > Open take a sweep as well as a trace."""
    p = Path(path)
    if p.is_file():
        return p.name == RESULTS_FILE
    return p.is_dir() and not (p / META_FILE).exists() and ((p / SWEEP_FILE).is_file() or (p / RESULTS_FILE).is_file())


class SweepDir:
    """An open sweep directory: its spec, its id and the rows already finished."""

    def __init__(self, path: Path, spec: SweepSpec, sweep_id: str, keep_traces: bool = False) -> None:
        self.path, self.spec, self.id = path, spec, sweep_id
        self.keep_traces = keep_traces   # recorded: a resumed sweep keeps traces if the first run did

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def traces_dir(self) -> Path:
        return self.path / TRACES

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "SweepDir":
        """An existing sweep, to read (explorer.open_sweep)."""
        p = Path(path)
        if p.is_file() and p.name == RESULTS_FILE:
            p = p.parent
        if not p.is_dir():
            raise UserError(f"{p} is not a sweep directory (trnx sweep -o DIR writes one).")
        data = read_sweep_file(p)
        if data is None:
            raise UserError(f"{p} holds no {SWEEP_FILE}; it is not a sweep directory (trnx sweep -o DIR writes one).")
        return cls(p, SweepSpec.from_json(data), data["id"], data.get("keep_traces") is True)

    @classmethod
    def start(cls, path: str | os.PathLike[str], spec: SweepSpec | None, resume: bool,
              keep_traces: bool = False) -> tuple["SweepDir", list[dict]]:
        """The directory to run `spec` in, and its finished rows when resuming (see the module
        docstring for what may be at `path`). `spec` None: resume with the recorded spec.
        Traces are kept when asked now or when the sweep was started so."""
        p = Path(path)
        if os.path.lexists(p) and not p.is_dir():
            raise UserError(f"{p} exists and is not a directory; choose a new or empty directory for the sweep (-o).")
        data = read_sweep_file(p) if p.is_dir() else None
        if data is not None:
            recorded = SweepSpec.from_json(data)
            done = read_rows(p / RESULTS_FILE) if (p / RESULTS_FILE).exists() else []
            if not resume:
                raise UserError(f"{p} already holds a sweep ({len(done)} of {len(recorded.configurations)} "
                                "configurations finished); pass --resume to finish it, or choose another -o.")
            if spec is not None and not spec.same_as(recorded):
                raise UserError(f"{p} holds a different sweep ({_describe(recorded)}); resume it with the same "
                                "options (or just --resume -o DIR), or choose another -o.")
            sweep = cls(p, recorded, data["id"], data.get("keep_traces") is True)
            if keep_traces and not sweep.keep_traces:
                sweep.keep_traces = True
                sweep._write_sweep_file(overwrite=True)
            return sweep, done
        if spec is None:
            raise UserError(f"{p} holds no sweep to resume; give the options and --grid to start one.")
        made = False
        if p.is_dir():
            if any(p.iterdir()):
                raise UserError(f"{p} is not empty and holds no sweep; choose a new or empty directory (-o).")
        elif not p.parent.is_dir():
            raise UserError(f"cannot create {p}: directory {p.parent} does not exist.")
        else:
            check_not_in_trace(p)  # before the directory is made: nothing is ever left inside a trace
            try:
                p.mkdir()
            except FileExistsError:
                raise UserError(f"{p} appeared while the sweep was starting; choose another -o.") from None
            made = True
        sweep = cls(p, spec, uuid.uuid4().hex, keep_traces)
        try:
            sweep._write_sweep_file(overwrite=False)
        except BaseException:
            if made:  # the empty directory this call made, and only if still empty
                with contextlib.suppress(OSError):
                    p.rmdir()
            raise
        return sweep, []

    def _write_sweep_file(self, overwrite: bool) -> None:
        with atomic_path(self.path / SWEEP_FILE, overwrite=overwrite) as tmp:
            tmp.write_text(json.dumps({"format": FORMAT, "version": 1, "id": self.id, "simulator_version": simcore.__version__,
                                       **self.spec.to_json(), "keep_traces": self.keep_traces}, indent=2) + "\n")

    # -- writing ---------------------------------------------------------------------
    def write(self, rows: list[Mapping[str, Any]]) -> None:
        write_results(self.results_path, rows, self.spec.axes, self.spec.to_json())

    def make_traces_dir(self) -> Path:
        self.traces_dir.mkdir(exist_ok=True)
        return self.traces_dir

    def install_trace(self, name: str, files: Mapping[str, bytes], options: Mapping[str, Any]) -> Path:
        """Write a trace a remote worker sent back as traces/NAME (explorer.sweep.traces.install)."""
        from explorer.sweep.traces import install

        return install(files, self.make_traces_dir() / name, options)


def _describe(spec: SweepSpec) -> str:
    fixed = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in spec.fixed.items())
    grid = " ".join(f"--grid {g}" for g in spec.grid_texts())
    return f"{fixed} {grid}".strip()
