"""`trnx capture`: simulate a workload on a Trainium preset and write a trace."""

from __future__ import annotations

import sys
import time

import click

from simcore.hardware import MATMUL_DTYPES


@click.command(help="""Simulate a workload on a hardware preset and write a NAME.trnx trace.

\b
Examples:
  trnx capture --hardware trn3 --workload llama3.1-8b --phase decode --batch 8 --context 4096 -o run.trnx
  trnx capture --hardware trn3 --workload gemm --shape 8192,8192,8192 --dtype mxfp8 -o gemm.trnx
  trnx capture --workload llama3.1-8b --phase prefill --seq 8192 --detail instruction --cores all -o pre.trnx
  trnx capture --hardware my-trn3-2xhbm.toml --workload my-graph.json -o whatif.trnx

`trnx presets` lists the hardware presets, models and micro-benchmarks.""")
@click.option("--hardware", "-H", default="trn3", show_default=True, help="Hardware preset name or a preset .toml file.")
@click.option("--workload", "-w", default="llama3.1-8b", show_default=True,
              help="Model, micro-benchmark (gemm, attention, softmax, rmsnorm) or an op-graph .json file.")
@click.option("--phase", type=click.Choice(["prefill", "decode", "train"]), help="Model phase (default decode).")
@click.option("--batch", type=int, help="Sequences per step (default 1).")
@click.option("--seq", type=int, help="New tokens per sequence for prefill/train (default 2048).")
@click.option("--context", type=int, help="Tokens already in the KV cache (decode default 4096).")
@click.option("--shape", help="Micro-benchmark shape, e.g. 8192,8192,8192 for gemm (M,K,N).")
@click.option("--dtype", type=click.Choice(MATMUL_DTYPES), default="bf16", show_default=True, help="Matmul data type.")
@click.option("--layers", type=int, help="Simulate the first N layers only.")
@click.option("--detail", type=click.Choice(["kernel", "instruction"]),
              help="kernel: kernels on every core; instruction: plus engine instructions, DMA and flows for --cores.")
@click.option("--cores", help="Cores to record instructions for: 'all' or a list like 0,1 (implies --detail instruction).")
@click.option("--compute-cores", type=int, help="Cores the workload is spread over (models: all; micro-benchmarks: 1).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed (MoE routing); same seed, same trace.")
@click.option("--output", "-o", required=True, type=click.Path(), help="Trace directory to write (NAME.trnx).")
@click.option("--overwrite", is_flag=True, help="Replace an existing trace at --output.")
@click.option("--compression", type=click.Choice(["none", "lz4", "zstd"]), default="none", show_default=True,
              help="Arrow buffer compression (none keeps the trace memory-mappable).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary line.")
def capture(hardware: str, workload: str, phase: str | None, batch: int | None, seq: int | None, context: int | None,
            shape: str | None, dtype: str, layers: int | None, detail: str | None, cores: str | None,
            compute_cores: int | None, seed: int, output: str, overwrite: bool, compression: str, quiet: bool) -> None:
    import simcore.capture as sc

    options = dict(hardware=hardware, workload=workload, phase=phase, batch=batch, seq=seq, context=context,
                   shape=shape, dtype=dtype, layers=layers, detail=detail, cores=cores, compute_cores=compute_cores,
                   seed=seed, overwrite=overwrite)
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
        path = sc.capture(out_path=output, progress=progress, compression=None if compression == "none" else compression,
                          **{k: v for k, v in options.items() if v is not None})
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if not quiet:
        from simcore.trace import open_trace

        trace = open_trace(path, validate=False)
        events = trace.row_count("instructions") + trace.row_count("dma")
        click.echo(
            f"wrote {path}: {trace.duration_ns / 1e6:.4g} ms simulated, {trace.row_count('kernels'):,} kernels, "
            f"{events:,} instruction/DMA events in {time.perf_counter() - t0:.2f} s"
        )
