"""The bundled sample traces: what they are and how to regenerate them.

`python -m simcore.samples [OUT_DIR]` rebuilds every sample into OUT_DIR (default
`sample_traces/`). Captures are deterministic for their seed and stored zstd
compressed, so the set stays a few MB in git; a test regenerates them and compares
them byte for byte with the committed copies.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcore.capture import capture

COMPRESSION = "zstd"


@dataclass(frozen=True)
class Sample:
    """One bundled trace: its directory name, what it shows, and the capture options."""

    name: str
    shows: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def dirname(self) -> str:
        return f"{self.name}.trnx"


SAMPLES: tuple[Sample, ...] = (
    Sample("gemm-4096-bf16", "a 4096^3 BF16 GEMM on one core, every instruction: tensor-engine bound",
           dict(workload="gemm", shape="4096,4096,4096", dtype="bf16", detail="instruction")),
    Sample("gemm-4096-mxfp8", "the same GEMM in MXFP8: about 4x faster (compare it with the BF16 one)",
           dict(workload="gemm", shape="4096,4096,4096", dtype="mxfp8", detail="instruction")),
    Sample("llama3.1-8b-decode", "one Llama 3.1 8B decode step (batch 1, 4096 context) on 8 cores, "
           "instruction detail on core 0: HBM bound",
           dict(workload="llama3.1-8b", phase="decode", batch=1, context=4096, cores="0")),
    Sample("llama3.1-70b-tp16-straggler", "a Llama 3.1 70B decode step (first 4 layers) with TP=16 at LNC=2 (4 chips "
           "x 4 logical cores a replica) and 4 data-parallel replicas on 16 chips of a 64-chip UltraServer, chip 5 "
           "running 1.3x slow and 2% jitter: the other ranks of its replica wait for it at every all-reduce",
           dict(hardware="trn3-ultraserver-gen1", workload="llama3.1-70b", phase="decode", batch=8, context=4096,
                layers=4, tp=16, dp=4, straggler="chip=5,slowdown=1.3", jitter="2%", cores="0", detail_chips="0,5",
                workers=1)),
    Sample("qwen3-30b-a3b-ep16-skew", "a Qwen3-30B-A3B decode step (first 4 layers) with EP=16 over 4 chips (4 "
           "logical cores each) and Zipf-skewed routing (exponent 1.2): all-to-all waits follow the ranks that own "
           "the popular experts",
           dict(hardware="trn3-ultraserver-gen1", workload="qwen3-30b-a3b", phase="decode", batch=64, layers=4,
                chips=4, ep=16, expert_skew=1.2, cores="0", workers=1)),
)

DEFAULT_SAMPLE = "llama3.1-8b-decode"


def generate(out_dir: str | Path, names: list[str] | None = None) -> list[Path]:
    """Capture the samples (all, or `names`) into `out_dir`, replacing older copies."""
    out = Path(out_dir)
    wanted = [s for s in SAMPLES if names is None or s.name in names]
    return [capture(dict(s.options, seed=0, overwrite=True), out / s.dirname, compression=COMPRESSION)
            for s in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simcore.samples", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?", default="sample_traces")
    ap.add_argument("--only", action="append", choices=[s.name for s in SAMPLES], help="only this sample")
    args = ap.parse_args(argv)
    for path in generate(args.out_dir, args.only):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
