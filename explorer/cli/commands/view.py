"""`trnx view [TRACE|SWEEP] [--smoke-test] [--theme light|dark] [--screenshot PNG [--overwrite]]`: open the desktop explorer.

A sweep directory (`trnx sweep -o DIR`, or its results.parquet) opens the sweep window, as
File > Open sweep does; a click on one of its points opens that configuration's trace.

On Linux, Qt aborts the whole process (exit 134, a core dump) when it finds no display
to connect to. `check_display` spots that case before Qt is imported and turns it into
one sentence and exit 2, suggesting the offscreen platform for a headless smoke test.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from simcore.errors import UserError

HEADLESS_HINT = "set QT_QPA_PLATFORM=offscreen to run --smoke-test without a display"


def check_display(environ: dict[str, str] | None = None, platform: str | None = None) -> None:
    """Raise UserError when a window cannot be opened here (Linux/BSD without a display server)."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return  # macOS and Windows always have their native platform plugin
    qpa = env.get("QT_QPA_PLATFORM", "").strip().split(":")[0].lower()
    has_x, has_wayland = bool(env.get("DISPLAY")), bool(env.get("WAYLAND_DISPLAY"))
    if not qpa and not has_x and not has_wayland:
        raise UserError(f"cannot open a window: no display (DISPLAY and WAYLAND_DISPLAY are not set); {HEADLESS_HINT}.")
    if qpa == "xcb" and not has_x:
        raise UserError(f"cannot open a window: QT_QPA_PLATFORM=xcb needs DISPLAY, which is not set; {HEADLESS_HINT}.")
    if qpa.startswith("wayland") and not has_wayland:
        raise UserError(f"cannot open a window: QT_QPA_PLATFORM={qpa} needs WAYLAND_DISPLAY, which is not set; "
                        f"{HEADLESS_HINT}.")


TIMINGS = ("open_s", "first_frame_s", "analyses_s", "peak_rss_mb")


def open_explorer(trace: str | None, smoke_test: bool, prog: str = "trnx view", timings: bool = False,
                  goto: str | None = None, theme: str | None = None, screenshot: str | None = None,
                  overwrite: bool = False) -> int:
    """What `trnx view` and `python -m explorer` (the packaged app) do; returns the exit code."""
    if timings and not (smoke_test and trace is not None):
        raise UserError("--timings measures a --smoke-test of a trace: give both, and the trace.")
    if goto is not None:
        if trace is None:
            raise UserError("--goto points into a trace: give the trace too.")
        from explorer.model.deep_link import parse

        parse(goto)  # bad grammar: one sentence before any window opens
    if trace is not None and not Path(trace).exists():
        raise UserError(f"{trace} does not exist.")
    sweep = trace is not None and is_sweep(trace, timings, goto)
    if screenshot is not None:
        from explorer.ui.screenshot import check_screenshot_path  # no Qt until a window opens

        check_screenshot_path(screenshot, overwrite)
    elif overwrite:
        raise UserError("--overwrite lets --screenshot replace its PNG: give --screenshot PNG too.")
    check_display()
    if sweep:
        return _open_sweep(trace, smoke_test, prog, theme, screenshot, overwrite)
    if trace is not None:
        from explorer.interop.neuron_profile.as_trace import trace_path

        trace = trace_path(trace)  # a Neuron Explorer profile directory opens through an import
    if smoke_test:
        from explorer.ui.smoke import smoke_test as run_smoke_test

        figures = run_smoke_test(trace, timings=timings, goto=goto, theme=theme, screenshot=screenshot,
                                 overwrite=overwrite)
        if timings:  # one JSON line, for scripts and benches
            click.echo(json.dumps({k: round(figures[k], 3) for k in TIMINGS}))
        else:
            click.echo(f"{prog}: window built, first frame rendered in {figures['frame_ms']:.1f} ms")
        if goto is not None:
            click.echo(f"{prog}: at {goto}, showing {figures['view_t0_ns']:.0f}..{figures['view_t1_ns']:.0f} ns")
        if screenshot is not None and not timings:
            click.echo(f"{prog}: wrote {screenshot}")
        return 0
    from explorer.ui import run

    return run(trace, goto=goto, theme=theme, screenshot=screenshot, overwrite=overwrite)


def is_sweep(path: str, timings: bool, goto: str | None) -> bool:
    """Is `path` a sweep (explorer.sweep.store.is_sweep_path)? One sentence, before any window,
    when it is one that cannot be read or when options that point into a trace were given."""
    from explorer.sweep.store import is_sweep_path

    if not is_sweep_path(path):
        return False
    if goto is not None:
        raise UserError(f"--goto points into a trace and {path} is a sweep; open the sweep and click a configuration, "
                        "or give that configuration's trace.")
    if timings:
        raise UserError(f"--timings measures opening a trace and {path} is a sweep; give one of its traces.")
    from explorer.sweep.opened import open_sweep

    open_sweep(path)
    return True


def _open_sweep(path: str, smoke_test: bool, prog: str, theme: str | None, screenshot: str | None,
                overwrite: bool) -> int:
    """`trnx view SWEEP`: the sweep window (and the main window its clicks open traces in)."""
    if smoke_test:
        from explorer.ui.smoke import smoke_test_sweep

        figures = smoke_test_sweep(path, theme=theme, screenshot=screenshot, overwrite=overwrite)
        click.echo(f"{prog}: sweep window built, {figures['rows']} of {figures['configurations']} configurations "
                   f"in its table, {figures['plotted']} plotted")
        if screenshot is not None:
            click.echo(f"{prog}: wrote {screenshot}")
        return 0
    from explorer.ui import run

    return run(path, theme=theme, screenshot=screenshot, overwrite=overwrite)


@click.command(help="""Open the Trn3 Explorer window, loading TRACE (a .trnx directory, or a Neuron Explorer profile directory) if given; a sweep directory (trnx sweep -o DIR) opens the sweep window.

\b
Examples:
  trnx view run.trnx
  trnx view sweep/                            # the sweep's results table and Pareto plot
  trnx view                                   # File > Open or File > New capture from the window
  QT_QPA_PLATFORM=offscreen trnx view sample_traces/gemm-4096-bf16.trnx --smoke-test
  QT_QPA_PLATFORM=offscreen trnx view big.trnx --smoke-test --timings   # {"open_s": ..., "first_frame_s": ...}
  trnx view run.trnx --goto kernel:2377                 # the links trnx summary prints; View > Copy link makes them
  trnx view run.trnx --goto t=1.2ms:1.5ms
  QT_QPA_PLATFORM=offscreen trnx view run.trnx --theme light --screenshot run.png --smoke-test   # 1920x1080 PNG""")
@click.argument("trace", required=False, type=click.Path())
@click.option("--smoke-test", is_flag=True, help="Build the window, render one frame and exit (packaging check); a trace the window would "
                   "then close (a checksum or, with no saved index, validation failing) exits 2 with its sentence.")
@click.option("--timings", is_flag=True,
              help="With --smoke-test: wait for the analysis panels, then print one JSON line {open_s, first_frame_s, "
                   "analyses_s, peak_rss_mb}: seconds from the start of opening the trace, and the peak memory in MiB.")
@click.option("--goto", metavar="LINK",
              help="Open at LINK: kernel:ID, instruction:ID, dma:ID, collective:ID, op:ID or op:NAME, t=TIME or "
                   "t=START:END (trace ns, with ns/us/ms/s): the links trnx summary prints and View > Copy link copies.")
@click.option("--theme", type=click.Choice(["dark", "light"]), default=None,
              help="Colour theme for this run (not saved; View > Theme saves one).")
@click.option("--screenshot", type=click.Path(dir_okay=False), default=None, metavar="PNG",
              help="Save the window at 1920x1080 as a PNG once the analysis panels are filled (a sweep: the "
                   "sweep window once drawn); with --smoke-test, then exit. An existing PNG is replaced only "
                   "with --overwrite.")
@click.option("--overwrite", is_flag=True,
              help="With --screenshot: replace PNG if it is a plain file (never a directory, a symlink or a file "
                   "inside a trace).")
def view(trace: str | None, smoke_test: bool, timings: bool, goto: str | None, theme: str | None,
         screenshot: str | None, overwrite: bool) -> None:
    code = open_explorer(trace, smoke_test, timings=timings, goto=goto, theme=theme, screenshot=screenshot,
                         overwrite=overwrite)
    if code:
        sys.exit(code)
