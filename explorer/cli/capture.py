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

\b
Multi-chip (UltraServers; docs/simulator.md):
  trnx capture -H trn3-ultraserver-gen1 -w llama3.1-70b --tp 16 -o tp16.trnx
  trnx capture -H trn3-ultraserver-gen1 -w deepseek-v3 --chips 64 --ep 64 --batch 256 --expert-skew 1.0 -o ep64.trnx
  trnx capture -H trn3-ultraserver-gen2 -w llama3.1-405b --tp 16 --pp 9 --jitter 2% --straggler chip=5,slowdown=1.3 -o big.trnx
  trnx capture -H trn3-ultraserver-gen1 -w llama3.1-8b --tp 4 --cores 0 --detail-chips 0,3 -o detail.trnx

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
@click.option("--chips", type=int, help="Chips to use (default tp x dp x pp; at most the preset's).")
@click.option("--tp", type=int, help="Tensor-parallel degree (heads and MLP width split over chips).")
@click.option("--ep", type=int, help="Expert-parallel degree (MoE experts split over chips; all-to-all dispatch/combine).")
@click.option("--dp", type=int, help="Data-parallel replicas (default: chips / (tp x pp)).")
@click.option("--pp", type=int, help="Pipeline stages (layers split over chips; send/recv between stages).")
@click.option("--sequence-parallel/--no-sequence-parallel", default=None,
              help="Norms on tokens / tp with all-gather/reduce-scatter (default: on for prefill/train with --tp > 1).")
@click.option("--microbatches", type=int, help="Microbatches per data-parallel replica (default: up to --pp).")
@click.option("--jitter", help="Per-rank compute jitter, e.g. 2% (seeded).")
@click.option("--straggler", multiple=True, help="Slow chip: chip=5,slowdown=1.3 or chip=5,delay=200us (repeatable).")
@click.option("--expert-skew", type=float, help="MoE routing skew: Zipf exponent of expert popularity (0 = uniform).")
@click.option("--detail-chips", help="Chips whose --cores get instruction detail: 'all' or a list like 0,5 (default 0).")
@click.option("--cc-algorithm", type=click.Choice(["auto", "ring", "mesh", "hierarchical"]), default="auto",
              show_default=True, help="Collective algorithm (a preference where it applies).")
@click.option("--workers", type=int, help="Processes simulating chips (default: auto, up to the machine's cores).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed (MoE routing, jitter); same seed, same trace.")
@click.option("--output", "-o", required=True, type=click.Path(), help="Trace directory to write (NAME.trnx).")
@click.option("--overwrite", is_flag=True, help="Replace an existing trace at --output.")
@click.option("--compression", type=click.Choice(["none", "lz4", "zstd"]), default="none", show_default=True,
              help="Arrow buffer compression (none keeps the trace memory-mappable).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary line.")
def capture(hardware: str, workload: str, phase: str | None, batch: int | None, seq: int | None, context: int | None,
            shape: str | None, dtype: str, layers: int | None, detail: str | None, cores: str | None,
            compute_cores: int | None, chips: int | None, tp: int | None, ep: int | None, dp: int | None,
            pp: int | None, sequence_parallel: bool | None, microbatches: int | None, jitter: str | None,
            straggler: tuple[str, ...], expert_skew: float | None, detail_chips: str | None, cc_algorithm: str,
            workers: int | None, seed: int, output: str, overwrite: bool, compression: str, quiet: bool) -> None:
    import simcore.capture as sc

    options = dict(hardware=hardware, workload=workload, phase=phase, batch=batch, seq=seq, context=context,
                   shape=shape, dtype=dtype, layers=layers, detail=detail, cores=cores, compute_cores=compute_cores,
                   chips=chips, tp=tp, ep=ep, dp=dp, pp=pp, sequence_parallel=sequence_parallel,
                   microbatches=microbatches, jitter=jitter, straggler=list(straggler) or None, expert_skew=expert_skew,
                   detail_chips=detail_chips, cc_algorithm=cc_algorithm, workers=workers, seed=seed, overwrite=overwrite)
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
        chips = trace.hardware.get("chips", 1)
        coll = trace.row_count("collectives")
        where = f" on {chips} chips" if isinstance(chips, int) and chips > 1 else ""
        extra = f", {coll:,} collective rank-rows" if coll else ""
        click.echo(
            f"wrote {path}: {trace.duration_ns / 1e6:.4g} ms simulated{where}, {trace.row_count('kernels'):,} kernels, "
            f"{events:,} instruction/DMA events{extra} in {time.perf_counter() - t0:.2f} s"
        )
