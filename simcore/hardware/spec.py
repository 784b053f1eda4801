"""Hardware specs: presets are TOML data files; `Hardware` gives typed, derived views of one.

A preset describes one chip (engines, SBUF, PSUM, DMA, HBM, links) and how many chips the
system has. Users write what-if presets as TOML files that name a `base` preset and
override only what they change, e.g. double the HBM bandwidth:

    base = "trn3"
    name = "trn3-2xhbm"
    [hbm]
    bandwidth_gbps = 9800
"""

from __future__ import annotations

import copy
import math
import tomllib
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from simcore.dtypes import MATMUL_DTYPES
from simcore.errors import LONG_INTEGER, ConfigError
from simcore.timing.runtime import RUNTIME_KEYS, RuntimeCosts

_TABLES = frozenset({  # required keys whose value is a table by dtype
    "tensor.macs_per_pe_cycle", "tensor.peak_tflops", "tensor.bf16_flop_weight",
    "vector.elems_per_cycle", "scalar.elems_per_cycle",
})
_REQUIRED: dict[str, tuple[str, ...]] = {
    "": ("name", "chips", "cores_per_chip"),
    "tensor": ("rows", "cols", "clock_ghz", "moving_free_max", "moving_min_cycles", "matmul_overhead_cycles",
               "load_stationary_cycles",
               "stationary_buffers", "macs_per_pe_cycle", "peak_tflops", "bf16_flop_weight", "mx_scale_group"),
    "tensor.throttle": ("start_fraction", "ramp_ns", "cooldown_ns"),
    "vector": ("clock_ghz", "elems_per_cycle", "min_cycles", "overhead_cycles", "exp_speedup_vs_scalar",
               "quantize_mx_elems_per_partition_cycle"),
    "scalar": ("clock_ghz", "elems_per_cycle", "exp_elems_per_cycle", "min_cycles", "overhead_cycles"),
    "gpsimd": ("clock_ghz", "elems_per_cycle", "overhead_cycles"),
    "sbuf": ("bytes_per_core", "partitions"),
    "psum": ("bytes_per_core", "partitions", "banks", "bank_bytes_per_partition"),
    "hbm": ("capacity_bytes", "bandwidth_gbps"),
    "dma": ("engines_per_core", "engine_gbps", "latency_ns", "descriptor_ns", "efficient_bytes_per_partition",
            "sim_queues_per_core"),
    "link": ("bandwidth_gbps",),
}


def _preset_dir() -> Path:
    return Path(str(resources.files("simcore.hardware") / "presets"))


def preset_names() -> list[str]:
    """Built-in hardware presets, sorted."""
    return sorted(p.stem for p in _preset_dir().glob("*.toml"))


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split(".") if dotted else []:
        node = node[part]
    return node


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"hardware preset file {path} is not valid TOML ({str(exc).splitlines()[0].rstrip('.')}).") from None
    except UnicodeDecodeError:
        raise ConfigError(f"hardware preset file {path} is not UTF-8 text.") from None
    except RecursionError:
        raise ConfigError(f"hardware preset file {path} nests tables or arrays too deeply to be a preset.") from None
    except ValueError:  # an integer literal longer than Python converts (4,300 digits)
        raise ConfigError(f"hardware preset file {path} {LONG_INTEGER}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read hardware preset file {path} ({exc.strerror}).") from None


def _resolve(name_or_path: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    builtin = _preset_dir() / f"{name_or_path}.toml"
    if builtin.is_file():  # built-in presets may name a base too (UltraServers build on their chip)
        path = builtin
    else:
        path = Path(name_or_path)
        if not (path.suffix == ".toml" or path.exists()):
            raise ConfigError(
                f"unknown hardware preset '{name_or_path}'; choose one of {', '.join(preset_names())} or pass a preset .toml file."
            )
        if not path.is_file():
            raise ConfigError(f"hardware preset file {path} does not exist.")
    data = _read_toml(path)
    base = data.pop("base", None)
    if "name" in data and not isinstance(data["name"], str):
        raise ConfigError(f"hardware preset file {path}: 'name' must be a string.")
    if base is not None:
        if not isinstance(base, str):
            raise ConfigError(f"hardware preset file {path}: 'base' must be a preset name.")
        if base in seen:
            raise ConfigError(f"hardware preset file {path}: 'base' chain loops back to '{base}'.")
        data = _merge(_resolve(base, seen + (base,)), data)
    data.setdefault("name", path.stem)
    if not builtin.is_file():
        data.setdefault("source_file", str(path))
    return data


# keys whose values are tables of numbers by dtype
_TABLES = {"tensor.macs_per_pe_cycle", "tensor.peak_tflops", "tensor.bf16_flop_weight", "vector.elems_per_cycle",
           "scalar.elems_per_cycle"}
# keys that must be positive integers
_INTS = {"chips", "cores_per_chip", "tensor.rows", "tensor.cols", "tensor.moving_free_max", "tensor.stationary_buffers",
         "tensor.mx_scale_group", "sbuf.bytes_per_core", "sbuf.partitions", "psum.bytes_per_core", "psum.partitions",
         "psum.banks", "psum.bank_bytes_per_partition", "hbm.capacity_bytes", "dma.engines_per_core",
         "dma.sim_queues_per_core"}
# keys that must be strictly positive numbers (rates and clocks a duration is divided by)
_POSITIVE = {"tensor.clock_ghz", "vector.clock_ghz", "scalar.clock_ghz", "gpsimd.clock_ghz", "hbm.bandwidth_gbps",
             "dma.engine_gbps", "dma.efficient_bytes_per_partition", "link.bandwidth_gbps", "gpsimd.elems_per_cycle",
             "scalar.exp_elems_per_cycle"}
MAX_CHIPS = 1 << 16
MAX_CORES_PER_CHIP = 1024
MAX_COUNT = 1 << 16    # array sizes, partitions, banks, queues: far above any chip, far below what a loop can't bear
MAX_BYTES = 1 << 50    # SBUF, PSUM and HBM sizes (1 PiB)
MIN_RATE, MAX_RATE = 1e-3, 1e9
"""Clocks (GHz), bandwidths (GB/s) and element rates lie in [MIN_RATE, MAX_RATE]: at 1 MHz or 1 MB/s
the largest workload still takes less than 2^61 ns (the trace format's time line), and no finite
rate turns a duration into infinity or zero."""
DEFAULT_SBUF_RESERVED = 0.15


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _validate(data: dict[str, Any]) -> None:
    """Every key the simulator reads is present with a usable value; else one sentence."""
    name = data.get("name", "?")
    if not isinstance(name, str) or not name:
        raise ConfigError("a hardware preset's 'name' must be a non-empty string.")
    for section, keys in _REQUIRED.items():
        node: Any = data
        for part in section.split(".") if section else []:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise ConfigError(f"hardware preset '{name}' lacks the [{section}] section.")
        for key in keys:
            where = f"{section}.{key}" if section else key
            if key not in node:
                raise ConfigError(f"hardware preset '{name}' lacks the key '{where}'.")
            value = node[key]
            if where == "name":
                continue
            if where in _TABLES:
                if not isinstance(value, dict) or not value:
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be a table of numbers by dtype.")
                values = list(value.values())
            else:
                values = [value]
            for v in values:
                if not _is_number(v):
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be a finite number (got {v!r}).")
                if v < 0:
                    raise ConfigError(f"hardware preset '{name}': '{where}' must not be negative (got {v}).")
                if where in _INTS and (not isinstance(v, int) or v < 1):
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be a positive integer (got {v!r}).")
                if where in _POSITIVE and v <= 0:
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be positive (got {v}).")
                if (where in _POSITIVE or where in _TABLES - {"tensor.bf16_flop_weight"}) and not MIN_RATE <= v <= MAX_RATE:
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be between {MIN_RATE:g} and {MAX_RATE:g} (got {v:g}).")
                if where in _INTS:
                    top = MAX_BYTES if "bytes" in where else MAX_CORES_PER_CHIP if where == "cores_per_chip" else MAX_COUNT
                    if v > top and where != "chips":
                        raise ConfigError(f"hardware preset '{name}': '{where}' must be at most {top:,} (got {v:,}).")
                if v > MAX_BYTES:
                    raise ConfigError(f"hardware preset '{name}': '{where}' must be at most 2^50 (got {v:g}).")
    if data["chips"] > MAX_CHIPS:
        raise ConfigError(f"hardware preset '{name}': 'chips' must be at most {MAX_CHIPS} (got {data['chips']}).")
    if data["tensor"]["cols"] != data["sbuf"]["partitions"]:
        raise ConfigError(
            f"hardware preset '{name}': 'tensor.cols' ({data['tensor']['cols']}) must equal 'sbuf.partitions' "
            f"({data['sbuf']['partitions']}): each array column writes one partition of a matmul's output tile, so any "
            "other width would time matmuls at a rate the array's peak does not have."
        )
    for key in ("macs_per_pe_cycle", "peak_tflops"):
        if any(v <= 0 for v in data["tensor"][key].values()):
            raise ConfigError(f"hardware preset '{name}': every 'tensor.{key}' entry must be positive.")
    if set(data["tensor"]["macs_per_pe_cycle"]) != set(data["tensor"]["peak_tflops"]):
        raise ConfigError(f"hardware preset '{name}': tensor.macs_per_pe_cycle and tensor.peak_tflops must list the same dtypes.")
    if "bf16" not in data["vector"]["elems_per_cycle"] and "fp32" not in data["vector"]["elems_per_cycle"]:
        raise ConfigError(f"hardware preset '{name}': 'vector.elems_per_cycle' needs a bf16 or fp32 entry.")
    if any(v <= 0 for t in ("vector", "scalar") for v in data[t]["elems_per_cycle"].values()):
        raise ConfigError(f"hardware preset '{name}': engine element rates must be positive.")
    reserved = data["sbuf"].get("reserved_fraction", DEFAULT_SBUF_RESERVED)
    if not _is_number(reserved) or not 0 <= reserved < 1:
        raise ConfigError(f"hardware preset '{name}': 'sbuf.reserved_fraction' must be a number in [0, 1) (got {reserved!r}).")
    peak_util = data["dma"].get("peak_utilization", 1.0)
    if not _is_number(peak_util) or not 0 < peak_util <= 1:
        raise ConfigError(f"hardware preset '{name}': 'dma.peak_utilization' must be a number in (0, 1] (got {peak_util!r}).")
    throttle = data["tensor"]["throttle"]
    if not 0 < throttle["start_fraction"] <= 1:
        raise ConfigError(f"hardware preset '{name}': 'tensor.throttle.start_fraction' must be in (0, 1].")
    _validate_lnc(name, data)
    for section, keys in (("link", ("latency_ns",)), ("dma", ("descriptor_overhead_bytes",)),
                          ("tensor", ("matmul_overhead_cycles",)), ("runtime", RUNTIME_KEYS)):
        for key in keys:
            v = data.get(section, {}).get(key, 0)
            if not _is_number(v) or v < 0 or v > MAX_BYTES:
                raise ConfigError(f"hardware preset '{name}': '{section}.{key}' must be a number from 0 to 2^50 (got {v!r}).")


def _validate_lnc(name: str, data: dict[str, Any]) -> None:
    """`[lnc]` (optional): the logical-core sizes the chip allows and its default; each divides the chip's cores."""
    lnc = data.get("lnc", {})
    if not isinstance(lnc, dict):
        raise ConfigError(f"hardware preset '{name}': [lnc] must be a table (default, choices).")
    choices = lnc.get("choices", [1])
    default = lnc.get("default", 1)
    if not (isinstance(choices, list) and choices and all(isinstance(c, int) and not isinstance(c, bool) and c > 0
                                                          and data["cores_per_chip"] % c == 0 for c in choices)):
        raise ConfigError(f"hardware preset '{name}': 'lnc.choices' must list positive integers that divide its "
                          f"{data['cores_per_chip']} cores per chip, like [1, 2] (got {choices!r}).")
    if default not in choices:
        raise ConfigError(f"hardware preset '{name}': 'lnc.default' must be one of lnc.choices {choices} (got {default!r}).")
    stacks = data["hbm"].get("stacks", 1)
    if not (isinstance(stacks, int) and not isinstance(stacks, bool) and stacks > 0):
        raise ConfigError(f"hardware preset '{name}': 'hbm.stacks' must be a positive integer (got {stacks!r}).")


class Hardware:
    """A resolved, validated hardware preset with the derived rates the simulator needs."""

    def __init__(self, data: dict[str, Any]) -> None:
        _validate(data)
        self.data = data

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def chips(self) -> int:
        return int(self.data["chips"])

    @property
    def cores_per_chip(self) -> int:
        return int(self.data["cores_per_chip"])

    # -- logical NeuronCores -------------------------------------------------------
    @property
    def lnc_default(self) -> int:
        """Physical cores per logical core when --lnc is not given (the Neuron SDK's default)."""
        return int(self.data.get("lnc", {}).get("default", 1))

    @property
    def lnc_choices(self) -> tuple[int, ...]:
        return tuple(int(c) for c in self.data.get("lnc", {}).get("choices", [1]))

    @property
    def hbm_stacks(self) -> int:
        return int(self.data["hbm"].get("stacks", 1))

    def logical_core(self, lnc: int, stack_sharers: int = 1) -> "Hardware":
        """One logical core of `lnc` physical cores seen as a chip of its own: what a rank of a parallel
        capture is simulated on. HBM is split by stack (each stack serves its cores; trn2: "four 24GB HBM
        banks. Each bank is shared by two physical NeuronCore-v3"): a logical core that spans whole stacks
        owns them, one that shares a stack with `stack_sharers - 1` other busy logical cores gets its share."""
        data = copy.deepcopy(self.data)
        cores, stacks = self.cores_per_chip, self.hbm_stacks
        per_stack = max(1, cores // stacks)
        share = lnc / cores if lnc >= per_stack else 1.0 / (stacks * max(1, stack_sharers))
        data["cores_per_chip"] = lnc
        data["chips"] = 1
        data["hbm"]["bandwidth_gbps"] = self.hbm_bytes_per_ns * share
        data["hbm"]["capacity_bytes"] = int(self.hbm_capacity * lnc / cores)
        data["hbm"]["stacks"] = 1
        data["lnc"] = {"default": lnc, "choices": [lnc]}
        return Hardware(data)

    # -- tensor engine -------------------------------------------------------------
    @property
    def tensor(self) -> dict[str, Any]:
        return self.data["tensor"]

    def supports(self, dtype: str) -> bool:
        return dtype in self.tensor["macs_per_pe_cycle"]

    def matmul_dtypes(self) -> list[str]:
        return [d for d in MATMUL_DTYPES if self.supports(d)]

    def check_dtype(self, dtype: str) -> None:
        if dtype not in MATMUL_DTYPES:
            raise ConfigError(f"unknown dtype '{dtype}'; choose one of {', '.join(MATMUL_DTYPES)}.")
        if not self.supports(dtype):
            raise ConfigError(
                f"{self.name} has no {dtype} support in its tensor engine; choose one of {', '.join(self.matmul_dtypes())}."
            )

    def contraction_per_pass(self, dtype: str) -> int:
        """Contraction rows one MultiplyMoving consumes (128 BF16, 256 FP8 double-row, 512 MX)."""
        return int(self.tensor["rows"] * max(1.0, float(self.tensor["macs_per_pe_cycle"][dtype])))

    def matmul_cycle_factor(self, dtype: str) -> float:
        """Cycles multiplier for dtypes slower than one MAC/PE/cycle (FP32 runs 4 passes)."""
        return 1.0 / min(1.0, float(self.tensor["macs_per_pe_cycle"][dtype]))

    def derived_peak_tflops(self, dtype: str) -> float:
        t = self.tensor
        return 2 * t["rows"] * t["cols"] * t["clock_ghz"] * float(t["macs_per_pe_cycle"][dtype]) / 1e3

    def peak_flops_per_ns(self, dtype: str) -> float:
        """Per-core peak in FLOP/ns, from the published TFLOPS figure."""
        return float(self.tensor["peak_tflops"][dtype]) * 1e3

    # -- memories and DMA ----------------------------------------------------------
    @property
    def sbuf_bytes(self) -> int:
        return int(self.data["sbuf"]["bytes_per_core"])

    @property
    def sbuf_budget(self) -> int:
        """SBUF bytes a kernel may allocate: the core's SBUF minus what the compiler and runtime
        reserve (`sbuf.reserved_fraction`, default 15%). Every lowering tiles within it."""
        reserved = float(self.data["sbuf"].get("reserved_fraction", DEFAULT_SBUF_RESERVED))
        return int(self.sbuf_bytes * (1.0 - reserved))

    @property
    def psum_bank_bytes(self) -> int:
        """One PSUM bank across all partitions (one 128 x 512 fp32 accumulation tile)."""
        return int(self.data["psum"]["bank_bytes_per_partition"]) * int(self.data["psum"]["partitions"])

    @property
    def partitions(self) -> int:
        return int(self.data["sbuf"]["partitions"])

    @property
    def psum_banks(self) -> int:
        return int(self.data["psum"]["banks"])

    @property
    def hbm_capacity(self) -> int:
        return int(self.data["hbm"]["capacity_bytes"])

    @property
    def hbm_bytes_per_ns(self) -> float:
        return float(self.data["hbm"]["bandwidth_gbps"])  # 1 GB/s = 1 byte/ns

    @property
    def core_dma_bytes_per_ns(self) -> float:
        d = self.data["dma"]
        return float(d["engines_per_core"]) * float(d["engine_gbps"])

    @property
    def dma_queues(self) -> int:
        return int(self.data["dma"]["sim_queues_per_core"])

    @cached_property
    def runtime(self) -> RuntimeCosts:
        """The runtime's fixed costs around kernels (the preset's `[runtime]` section)."""
        return RuntimeCosts.of(self.data)

    @property
    def has_vector_exp(self) -> bool:
        return float(self.data["vector"]["exp_speedup_vs_scalar"]) > 0

    @property
    def has_quantize_mx(self) -> bool:
        return float(self.data["vector"]["quantize_mx_elems_per_partition_cycle"]) > 0

    # -- trace meta ----------------------------------------------------------------
    @cached_property
    def meta(self) -> dict[str, Any]:
        """The whole resolved preset, as written to meta.json `hardware`."""
        out = copy.deepcopy(self.data)
        out.setdefault("hbm", {})["capacity_bytes"] = self.hbm_capacity
        return out

    def __repr__(self) -> str:
        return f"Hardware({self.name!r}, {self.chips} chip(s) x {self.cores_per_chip} cores)"


def load_hardware(name_or_path: str | Path) -> Hardware:
    """A built-in preset by name (`trn3`, `trn2`) or a user preset file (optionally with `base`)."""
    if isinstance(name_or_path, Hardware):
        return name_or_path
    text = str(name_or_path).strip()
    if not text:
        raise ConfigError("no hardware preset given; choose one of " + ", ".join(preset_names()) + ".")
    return Hardware(_resolve(text))
