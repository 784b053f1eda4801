"""Column access and name mappings shared by the Neuron profile importer and exporter."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Neuron engine names (and the short names its docs also use) -> our engine
ENGINE_ALIASES = {
    "tensor": "tensor", "pe": "tensor", "tensormatrix": "tensor", "tensor_matrix": "tensor", "matmult": "tensor",
    "vector": "vector", "dve": "vector", "scalar": "scalar", "act": "scalar", "activation": "scalar",
    "gpsimd": "gpsimd", "pool": "gpsimd", "sync": "sync", "sp": "sync",
}
TRACK_NAME = {"tensor": "Tensor", "tensor_matrix": "TensorMatrix", "vector": "Vector", "scalar": "Scalar",
              "gpsimd": "GpSimd", "sync": "Sync"}
# Neuron's adjusted_flops multipliers (BF16-equivalent FLOPs per FLOP) on Trn2/Trn3, from the schema page
NEURON_BF16_WEIGHT = {"bf16": 1.0, "fp16": 1.0, "tf32": 1.0, "fp32": 4.0, "fp8": 0.5, "mxfp8": 0.25, "mxfp4": 0.25}
_DTYPE_OF_WEIGHT = ((1.0, "bf16"), (4.0, "fp32"), (0.5, "fp8"), (0.25, "mxfp8"))

COLLECTIVE_KIND = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
                   "alltoall": "all_to_all", "alltoallv": "all_to_all", "sendrecv": "send_recv", "send": "send_recv",
                   "recv": "send_recv", "permute": "send_recv", "collectivepermute": "send_recv"}
OPERATION_OF_KIND = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
                     "all_to_all": "AllToAll", "send_recv": "SendRecv"}
DTYPE_BYTES = {"fp32": 4, "float32": 4, "f32": 4, "int32": 4, "uint32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2,
               "float16": 2, "f16": 2, "int16": 2, "uint16": 2, "fp8": 1, "fp8e4": 1, "fp8e5": 1, "float8": 1,
               "int8": 1, "uint8": 1, "fp64": 8, "float64": 8, "int64": 8, "uint64": 8}
MEMORY_TOKEN = {"hbm": "[HBM]", "sbuf": "[SB]", "psum": "[PSUM]", "remote": "[REMOTE]", "host": "[HOST]"}


def memory_of(token: str) -> str:
    """A DmaPacketAggregated source/dest string -> our memory name (hbm, sbuf, psum, remote, host).

    The schema's examples are `[SB]` and `[OUTPUT]`; input, output, weight and spill tensors
    live in device HBM, so every token that is not SBUF, PSUM, host or a peer is HBM."""
    t = token.upper()
    if "PSUM" in t:
        return "psum"
    if "SB" in t and "HBM" not in t:
        return "sbuf"
    if "HOST" in t:
        return "host"
    if "REMOTE" in t or "PEER" in t:
        return "remote"
    return "hbm"


def collective_kind(operation: str) -> str:
    key = "".join(ch for ch in operation.lower() if ch.isalnum())
    return COLLECTIVE_KIND.get(key, "_".join(operation.lower().split()) or "unknown")


def dtype_of_weight(weight: float) -> str:
    """The dtype whose Neuron multiplier is `weight` ('' when none is within 1%)."""
    for w, name in _DTYPE_OF_WEIGHT:
        if abs(weight - w) <= 0.01 * w:
            return name
    return ""


def ints(table: pa.Table | None, name: str, default: int = 0) -> np.ndarray:
    """An integer column as int64 numpy, nulls (or a missing column) as `default`."""
    if table is None:
        return np.zeros(0, np.int64)
    if name not in table.column_names:
        return np.full(table.num_rows, default, np.int64)
    col = table.column(name)
    if col.null_count:
        col = pc.fill_null(col, default)
    return col.to_numpy().astype(np.int64, copy=False)


def floats(table: pa.Table, name: str, default: float = np.nan) -> np.ndarray:
    if name not in table.column_names:
        return np.full(table.num_rows, default, np.float64)
    col = table.column(name)
    if col.null_count:
        col = pc.fill_null(col.cast(pa.float64()), default)
    return col.to_numpy().astype(np.float64, copy=False)


def texts(table: pa.Table, name: str, default: str = "") -> tuple[np.ndarray, list[str]]:
    """A string column as (int codes, vocabulary); nulls or a missing column read as `default`."""
    n = table.num_rows
    if name not in table.column_names:
        return np.zeros(n, np.int64), [default]
    col = table.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    col = pc.fill_null(col, default) if col.null_count else col
    enc = col.combine_chunks().dictionary_encode() if n else pa.array([], pa.string()).dictionary_encode()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()
