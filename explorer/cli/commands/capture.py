"""`trnx capture`: simulate a workload on a Trainium preset and write a trace."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import click

from explorer.cli.signals import sigterm_like_ctrl_c
from simcore.capture.options import OPTIONS, Option


def click_option(opt: Option) -> Callable:
    """The click option of a declared capture option; not given is None (a flag: False), so
    the simulator applies its own default and an explicit value always wins."""
    names = [opt.flag] + ([opt.short] if opt.short else [])
    kw: dict[str, Any] = {"help": opt.help, "default": None}
    if opt.kind == "flag":
        kw.update(is_flag=True, default=False)
    elif opt.kind == "switch":
        names = [f"{opt.flag}/--no-{opt.flag[2:]}"]
    elif opt.kind == "choice":
        kw["type"] = click.Choice(list(opt.choices or ()))
    elif opt.kind == "repeated":
        kw["multiple"] = True
    elif opt.kind in ("int", "float"):
        kw["type"] = int if opt.kind == "int" else float
    if opt.shown_default is not None:  # in the help as click shows defaults, without passing one
        kw["help"] = f"{opt.help}  [default: {opt.shown_default}]"
    return click.option(*names, opt.name, **kw)


def capture_options(command: Callable, options: Iterable[Option] | None = None) -> Callable:
    """Every capture option of simcore/capture/options.py (or `options`), in declaration order."""
    for opt in reversed(list(OPTIONS.values() if options is None else options)):
        command = click_option(opt)(command)
    return command


def cluster_runner(address: str, options: dict[str, Any]) -> Any:
    """A DaskRunner for `--scheduler` (connected when the chips are simulated), or a UserError
    when the capture has no chips to spread."""
    from simcore.capture.multichip.config import is_multichip
    from simcore.capture.multichip.dask_runner import DaskRunner
    from simcore.capture.options import CaptureConfig
    from simcore.errors import UserError

    if options.get("workers") is not None:
        raise UserError("--workers starts local processes and --scheduler uses a cluster's workers; give one of them.")
    if not is_multichip(CaptureConfig.from_kwargs({k: v for k, v in options.items() if v is not None})):
        raise UserError("--scheduler spreads a multi-chip capture's chips over a cluster; this capture runs on one chip "
                        "(give --tp, --ep, --dp, --pp, --lnc or --chips, or use trnx sweep --scheduler for many captures).")
    runner = DaskRunner(address)
    runner.connect()  # now: an unreachable scheduler fails before any simulation
    return runner


@click.command(help="""Simulate a workload on a hardware preset and write a NAME.trnx trace.

\b
Examples:
  trnx capture --hardware trn3 --workload llama3.1-8b --phase decode --batch 8 --context 4096 -o run.trnx
  trnx capture --hardware trn3 --workload gemm --shape 8192,8192,8192 --dtype mxfp8 -o gemm.trnx
  trnx capture --workload llama3.1-8b --phase prefill --seq 8192 --detail instruction --cores all -o pre.trnx
  trnx capture --hardware my-trn3-2xhbm.toml --workload my-graph.json -o whatif.trnx

\b
Multi-chip (degrees count ranks = logical cores, 4 a chip at LNC=2; docs/simulator.md):
  trnx capture -H trn2.48xlarge -w llama3.1-70b --tp 64 --lnc 2 --phase decode --context 10000 -o t.trnx
  trnx capture -H trn3-ultraserver-gen1 -w llama3.1-70b --tp 64 -o tp64.trnx
  trnx capture -H trn3-ultraserver-gen1 -w deepseek-v3 --chips 16 --ep 64 --batch 256 --dtype mxfp8 -o ep64.trnx
  trnx capture -H trn3-ultraserver-gen2 -w llama3.1-405b --tp 64 --pp 9 --jitter 2% --straggler chip=5,slowdown=1.3 -o big.trnx
  trnx capture -H trn3-ultraserver-gen1 -w llama3.1-8b --tp 16 --cores 0 --detail-chips 0,3 -o detail.trnx
  trnx capture -H trn3-ultraserver-gen2 -w llama3.1-405b --tp 64 --pp 9 --scheduler tcp://head:8786 -o big.trnx

`trnx presets` lists the hardware presets, models and micro-benchmarks. A core in --cores the
workload does not run on (a micro-benchmark runs on core 0 unless --compute-cores spreads it)
gets empty instruction rows; capture says so in one line (on stderr, also with --quiet).""")
@capture_options
@click.option("--output", "-o", required=True, type=click.Path(), help="Trace directory to write (NAME.trnx).")
@click.option("--compression", type=click.Choice(["none", "lz4", "zstd"]), default="none", show_default=True,
              help="Arrow buffer compression (none keeps the trace memory-mappable).")
@click.option("--scheduler", metavar="tcp://HOST:PORT", default=None,
              help="Simulate a multi-chip capture's chips on this Dask cluster (docs/sweeps.md).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary line.")
@sigterm_like_ctrl_c
def capture(output: str, compression: str, scheduler: str | None, quiet: bool, **given: Any) -> None:
    import simcore.capture as sc
    from explorer.model.timeline.index_capture import IndexRecorder

    options = {k: (list(v) or None) if isinstance(v, tuple) else v for k, v in given.items()}
    runner = None if scheduler is None else cluster_runner(scheduler, options)
    t0 = time.perf_counter()
    show = not quiet and sys.stderr.isatty()
    bar = click.progressbar(length=1000, label="capturing", file=sys.stderr, show_percent=True) if show else None
    done = [0]

    def progress(fraction: float, message: str) -> None:
        if bar is not None:
            step = int(fraction * 1000) - done[0]
            if step > 0:
                bar.label = f"capturing {message[:40]:<40}"
                bar.update(step)
                done[0] += step

    try:
        if bar is not None:
            bar.__enter__()
        recorder = IndexRecorder()  # the timeline's index, from the batches as written: even a first open maps it
        path = sc.capture(out_path=output, progress=progress, compression=None if compression == "none" else compression,
                          observer=recorder, **({} if runner is None else {"runner": runner}),
                          **{k: v for k, v in options.items() if v is not None})
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        if runner is not None:
            runner.close()
    recorder.save(path)
    from explorer.model import idle_cores

    note = idle_cores.idle_cores_note_of(path)
    if note:
        click.echo(note, err=True)  # even with --quiet: the rows asked for are empty
    if not quiet:
        from explorer.model.units import plural
        from simcore.trace import open_trace

        trace = open_trace(path, validate=False)
        events = trace.row_count("instructions") + trace.row_count("dma")
        chips = trace.hardware.get("chips", 1)
        ranks = trace.meta.get("capture", {}).get("ranks", chips)
        coll = trace.row_count("collectives")
        where = _placement(ranks, chips)
        extra = f", {plural(coll, 'collective rank-row')}" if coll else ""
        click.echo(
            f"wrote {path}: {trace.duration_ns / 1e6:.4g} ms simulated{where}, {plural(trace.row_count('kernels'), 'kernel')}, "
            f"{plural(events, 'instruction/DMA event')}{extra} in {time.perf_counter() - t0:.2f} s"
        )


def _placement(ranks: object, chips: object) -> str:
    """' on R ranks (C chips)' for a multi-rank capture: at LNC=2 several ranks share a chip, so chips alone
    would say '1 chip' for a two-stage pipeline on one chip's logical cores."""
    if not isinstance(ranks, int) or not isinstance(chips, int) or max(ranks, chips) <= 1:
        return ""
    return f" on {ranks} ranks ({chips} chip{'s' if chips != 1 else ''})"
