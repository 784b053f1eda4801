"""A core's engine queues, in track order: the compute engines, then its DMA queues (qSyncIO0..).

The lowest layer of lowering: instruction costs (`costs`) and programs (`program`) both name
engines by these ids."""

from __future__ import annotations

# Engine queues of one core, in track order. DMA queues follow (qSyncIO0..).
TENSOR, MATRIX, VECTOR, SCALAR, GPSIMD, SYNC = range(6)
N_COMPUTE_ENGINES = 6
ENGINE_TRACKS: tuple[tuple[str, str], ...] = (
    ("tensor", "Tensor"),
    ("tensor_matrix", "TensorMatrix"),
    ("vector", "Vector"),
    ("scalar", "Scalar"),
    ("gpsimd", "GpSimd"),
    ("sync", "Sync"),
)


def dma_queue(i: int) -> int:
    """Engine id of DMA queue `i` of a core."""
    return N_COMPUTE_ENGINES + i


def dma_track_name(i: int) -> str:
    return f"qSyncIO{i}"
