"""Workloads: built-in models (dense and MoE LLMs), micro-benchmarks and JSON op graphs -> op graphs."""

from simcore.workloads.micro import MICROBENCHMARKS, microbenchmark, parse_shape
from simcore.workloads.models import MODELS, ModelConfig
from simcore.workloads.ops import OP_KINDS, Op, Workload

PHASES = ("prefill", "decode", "train")

__all__ = ["MICROBENCHMARKS", "MODELS", "OP_KINDS", "PHASES", "ModelConfig", "Op", "Workload", "microbenchmark",
           "parse_shape"]
