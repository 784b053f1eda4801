"""Capture options, each declared once: `CaptureConfig`'s fields carry their flag, help, kind,
choices and default (dataclass field metadata), and everything else is generated from them --
`trnx capture`'s click options (explorer/cli/capture.py), `simcore.capture.choices()`, the
GUI capture dialog's editors, and the option table in docs/simulator.md.

A field left at None was *not given*: the simulator then applies the declared default
(`Option.default`, or the rule `Option.default_text` describes), so an option given
explicitly always wins over a value from elsewhere -- `--dtype bf16` over an op-graph
file's `"dtype": "fp8"`.

To add an option: one field below with `option(...)`, then read it in `resolve`
(simcore/capture/config.py) and regenerate the docs (`python -m simcore.capture.docgen`,
`python -m explorer.cli.docgen`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from simcore.collectives.cost import ALGORITHMS
from simcore.dtypes import BF16, MATMUL_DTYPES
from simcore.errors import ConfigError
from simcore.workloads import PHASES
from simcore.workloads.fusion import FUSION_MODES

DETAILS = ("kernel", "instruction")
DEFAULT_CONTEXT = 4096   # decode's tokens already cached when --context is not given (prefill/train: 0)

# Groups: where an option sits in the capture dialog and the docs. Giving any PARALLEL option
# makes a model capture multi-chip (micro-benchmarks and op graphs refuse them).
WORKLOAD, DETAIL, PARALLEL, RUN = "workload", "detail", "parallel", "run"
GROUP_TITLES = {WORKLOAD: "Hardware and workload", DETAIL: "Detail and cores", PARALLEL: "Multi-chip",
                RUN: "Running"}

# How a value is written on the command line and parsed from text (`Option.parse`):
# int, float, text, choice (one of `choices`), flag (--x: true), switch (--x/--no-x: true, false
# or not given) and repeated (a text option that may be given several times: a list).
KINDS = ("int", "float", "text", "choice", "flag", "switch", "repeated")
_META = "simcore.capture.option"
_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


@dataclass(frozen=True)
class Option:
    """One capture option: what `trnx capture --help`, the dialog and the docs say about it."""

    name: str                          # the CaptureConfig field (and the Python keyword)
    help: str                          # one sentence, as --help prints it
    kind: str = "text"                 # one of KINDS
    default: Any = None                # what applies when the option is not given (None: see default_text)
    default_text: str | None = None    # the default in words, when it depends on other options
    choices: tuple[str, ...] | None = None
    short: str | None = None           # a one-letter alias: -H, -w
    group: str = RUN
    label: str = ""                    # the dialog's label (default: the name in words)
    recorded: bool = True              # kept in meta.json `capture.options` (False: no effect on the trace)

    @property
    def flag(self) -> str:
        """The `trnx capture` flag: --compute-cores for compute_cores."""
        return flag_of(self.name)

    @property
    def shown_default(self) -> str | None:
        """The default as help and docs show it, or None when there is none worth showing."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.kind == "flag":
            return None
        return str(self.default)

    def parse(self, text: str) -> Any:
        """An option value from text (a sweep's `--grid tp=8,16`, a form field); ConfigError names
        the flag. Range and consistency checks are `resolve`'s; this only reads the type."""
        raw = str(text).strip()
        try:
            if self.kind == "int":
                return int(raw)
            if self.kind == "float":
                value = float(raw)
                if not math.isfinite(value):
                    raise ValueError(raw)
                return value
        except ValueError:
            noun = "an integer" if self.kind == "int" else "a number"
            raise ConfigError(f"{self.flag} must be {noun} (got {text!r}).") from None
        if self.kind in ("flag", "switch"):
            if raw.lower() in _TRUE:
                return True
            if raw.lower() in _FALSE:
                return False
            raise ConfigError(f"{self.flag} must be true or false (got {text!r}).")
        if self.kind == "choice" and raw not in (self.choices or ()):
            raise ConfigError(f"unknown {self.flag} '{raw}'; choose one of {', '.join(self.choices or ())}.")
        return [raw] if self.kind == "repeated" else raw


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def option(help: str, *, kind: str = "text", default: Any = None, default_text: str | None = None,
           choices: tuple[str, ...] | None = None, short: str | None = None, group: str = RUN, label: str = "",
           given_only: bool = False, recorded: bool = True) -> Any:
    """Declare a CaptureConfig field. The field holds `default` until set, except with
    `given_only` (and whenever `default` is None): then it holds None until the option is given,
    so the simulator can tell an explicit value from its default."""
    assert kind in KINDS, kind
    spec = dict(help=help, kind=kind, default=default, default_text=default_text, choices=choices, short=short,
                group=group, label=label, recorded=recorded)
    return field(default=None if given_only else default, metadata={_META: spec})


@dataclass
class CaptureConfig:
    """What to simulate. Field names are `trnx capture`'s flags with underscores."""

    # -- hardware and workload
    hardware: str = option("Hardware preset name or a preset .toml file.", default="trn3", short="-H",
                           group=WORKLOAD)
    workload: str = option("Model, micro-benchmark (gemm, attention, softmax, rmsnorm, allreduce, ...) or an "
                           "op-graph .json file.", default="llama3.1-8b", short="-w", group=WORKLOAD)
    phase: str | None = option("Model phase.", kind="choice", choices=PHASES, default="decode", given_only=True,
                               group=WORKLOAD)
    batch: int = option("Sequences per step.", kind="int", default=1, group=WORKLOAD)
    seq: int | None = option("New tokens per sequence, for prefill and train.", kind="int", default=2048,
                             given_only=True, group=WORKLOAD, label="Sequence (prefill/train)")
    context: int | None = option("Tokens already in the KV cache.", kind="int",
                                 default_text=f"{DEFAULT_CONTEXT} for decode, else 0", group=WORKLOAD,
                                 label="Context (KV cache tokens)")
    shape: str | tuple | list | None = option("Micro-benchmark shape, e.g. 8192,8192,8192 for gemm (M,K,N).",
                                              default_text="the micro-benchmark's own", group=WORKLOAD)
    dtype: str | None = option("Matmul data type (an op-graph file's own dtype when not given).", kind="choice",
                               choices=MATMUL_DTYPES, default=BF16, given_only=True, group=WORKLOAD,
                               label="Data type")
    layers: int | None = option("Simulate the first N layers only.", kind="int", default_text="all",
                                group=WORKLOAD)
    fusion: str = option("Model steps run NxD Inference's fused NKI kernels (norm + QKV + RoPE, norm + MLP, flash "
                         "decoding) or one kernel per op (a what-if; docs/simulator.md, Fusion).", kind="choice",
                         choices=FUSION_MODES, default="on", group=WORKLOAD)
    # -- detail and cores
    detail: str | None = option("kernel: kernels on every core; instruction: plus engine instructions, DMA and "
                                "flows for --cores.", kind="choice", choices=DETAILS,
                                default_text="instruction with --cores, else kernel", group=DETAIL,
                                label="Detail level")
    cores: str | list[int] | None = option("Cores to record instructions for: 'all' or a list like 0,1 (implies "
                                           "--detail instruction).", default_text="0 with --detail instruction",
                                           group=DETAIL, label="Instruction cores")
    compute_cores: int | None = option("Cores the workload is spread over.", kind="int",
                                       default_text="models: all; micro-benchmarks: 1", group=DETAIL)
    # -- multi-chip (docs/simulator.md, "Multi-chip"): any of these makes a model capture multi-chip
    chips: int | None = option("Chips to use; at most the preset's chips (trnx presets lists them). Each holds cores "
                               "/ --lnc ranks.", kind="int", default_text="the chips tp x dp x pp ranks fill",
                               group=PARALLEL)
    lnc: int | None = option("Logical NeuronCore size: physical cores per rank (1 or 2, as the Neuron SDK's "
                             "NEURON_LOGICAL_NC_CONFIG). Parallel degrees count ranks, one per logical core.",
                             kind="int", default_text="the preset's: 2 on trn2 and trn3, 1 on trn1", group=PARALLEL,
                             label="LNC (cores per rank)")
    tp: int | None = option("Tensor-parallel degree in ranks (logical cores, as NxD Inference's tp_degree; 1 is one "
                            "logical core): heads and MLP width split over them, all-reduce (or "
                            "reduce-scatter/all-gather).", kind="int", default=1,
                            default_text="1 with other degrees; none at all: the whole chip as one program",
                            given_only=True, group=PARALLEL)
    ep: int | None = option("Expert-parallel degree (MoE) in ranks: experts split over them, all-to-all dispatch and "
                            "combine.", kind="int", default=1, given_only=True, group=PARALLEL)
    dp: int | None = option("Data-parallel replicas; training all-reduces gradients.", kind="int",
                            default_text="ranks of --chips / (tp x pp)", group=PARALLEL)
    pp: int | None = option("Pipeline stages: layers split over ranks, send/recv between stages.", kind="int",
                            default=1, given_only=True, group=PARALLEL)
    sequence_parallel: bool | None = option("Norms on tokens / tp with all-gather/reduce-scatter.", kind="switch",
                                            default_text="on for prefill/train with --tp > 1", group=PARALLEL)
    microbatches: int | None = option("Microbatches per data-parallel replica (not given: the largest divisor of "
                                      "its batch up to --pp).", kind="int", default_text="up to --pp",
                                      group=PARALLEL)
    jitter: str | float | None = option("Per-rank compute jitter, e.g. 2% (seeded).", default_text="0%",
                                        group=PARALLEL)
    straggler: str | list | None = option("Slow chip: chip=5,slowdown=1.3 or chip=5,delay=200us (repeat the "
                                          "option, or separate several with ;).", kind="repeated",
                                          group=PARALLEL)
    expert_skew: float | None = option("MoE routing skew: Zipf exponent of expert popularity (0 = uniform, "
                                       "1 = strong).", kind="float", default=0.0, given_only=True, group=PARALLEL)
    detail_chips: str | list[int] | None = option("Chips whose --cores get instruction detail: 'all' or a list "
                                                  "like 0,5.", default_text="0", group=PARALLEL)
    # -- running
    cc_algorithm: str = option("Collective algorithm (a preference where it applies).", kind="choice",
                               choices=ALGORITHMS, default="auto", group=RUN, label="CC algorithm")
    workers: int | None = option("Processes simulating chips (auto: up to the machine's idle cores).", kind="int",
                                 default_text="auto", group=RUN, recorded=False)
    seed: int = option("Seed (MoE routing, jitter); same seed, same trace.", kind="int", default=0, group=DETAIL)
    overwrite: bool = option("Replace the trace at --output if trnx wrote it (anything else there is refused and left alone).", kind="flag", default=False, group=RUN,
                             recorded=False)

    @classmethod
    def from_kwargs(cls, config: "CaptureConfig | dict[str, Any] | None" = None, **kwargs: Any) -> "CaptureConfig":
        """A config from a CaptureConfig or a dict, with keyword options (not None) on top."""
        if isinstance(config, CaptureConfig):
            base = asdict(config)
        elif isinstance(config, dict):
            base = dict(config)
        elif config is None:
            base = {}
        else:
            raise ConfigError("capture options must be a CaptureConfig or a dict of options.")
        base.update({k: v for k, v in kwargs.items() if v is not None})
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(base) - set(known))
        if unknown:
            raise ConfigError(f"unknown capture option '{unknown[0]}'; known: {', '.join(known)}.")
        return cls(**base)

    def given(self) -> dict[str, Any]:
        """The options that differ from their declared state when not given (JSON-ready), for
        meta.json `capture.options`: what "Re-run with changes" gives back unchanged."""
        out: dict[str, Any] = {}
        for opt in declared(type(self)):
            f = type(self).__dataclass_fields__[opt.name]
            value = getattr(self, opt.name)
            if opt.recorded and value is not None and value != f.default:
                out[opt.name] = _plain(value)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _kind_of(annotation: Any) -> str:
    """A field declared without `option(...)` (a subclass growing options): its kind from its type."""
    parts = set(str(annotation).replace(" ", "").split("|")) - {"None"}
    if parts == {"bool"}:
        return "switch" if "None" in str(annotation) else "flag"
    if parts == {"int"}:
        return "int"
    if parts and parts <= {"float", "int"}:
        return "float"
    return "text"


def declared(cls: type = CaptureConfig) -> list[Option]:
    """Every option of `cls` (CaptureConfig or a subclass), in field order."""
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_META)
        if spec is None:
            default = None if f.default is dataclasses.MISSING else f.default
            spec = dict(help="", kind=_kind_of(f.type), default=default)
        out.append(Option(f.name, **spec))
    return out


OPTIONS: dict[str, Option] = {o.name: o for o in declared()}


def default_of(name: str) -> Any:
    """The declared default of an option (None when it depends on other options)."""
    return OPTIONS[name].default


def parallel_options() -> tuple[str, ...]:
    """Options that make a model capture multi-chip (and that micro-benchmarks refuse)."""
    return tuple(o.name for o in OPTIONS.values() if o.group == PARALLEL)
