"""The trace format v1: the one place that says which tables and columns a trace has.

The writer, the reader, the validator and docs/trace-format.md all derive from the
specs below, so they cannot disagree. Versioning rule: a minor version only adds
(new optional columns, new tables, new enum values); a reader accepts any minor
version of its major and refuses a newer major with a clear message.
1.1 added the `runtime` track kind; 1.2 the optional `tracks.lcore` column (logical NeuronCores) and the
optional `collectives.hbm_read_bytes` / `hbm_write_bytes` (the HBM a collective's DMA reads and writes).
1.3 added a checksum of every table file in meta.json (CHECKSUM).
1.4 the optional table `sbuf_allocations` (the SBUF and PSUM buffers of instruction-detail cores' kernels).
1.5 records the checksums with BLAKE3 (`blake3-64MiB`) instead of SHA-256: less than half the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

FORMAT_NAME = "trnx-trace"
FORMAT_VERSION = "1.5"
FORMAT_MAJOR = 1
META_FILE = "meta.json"
TABLE_SUFFIX = ".arrow"
TRACE_SUFFIX = ".trnx"
TIME_UNIT = "ns"
CHECKSUM = "checksum"
"""meta.json key, in each table entry and partition entry, of the file's checksum as written
(1.3): `"blake3-64MiB:<hex>"` (1.5; `"sha256-64MiB:<hex>"` in 1.3 and 1.4), the hash of the
hashes of its 64 MiB blocks, so a reader verifies a big file on every core
(simcore/trace/checksum.py)."""
INDEX_CACHE_FILE = "timeline-index.cache"
DISPOSABLE_FILES = (INDEX_CACHE_FILE,)
"""Files the tool itself may keep inside a trace directory beside its tables (caches it can
rebuild): a trace holding them is still one the tool wrote, so --overwrite may replace it.
Anything else in a trace directory (a user's notes, annotations) is not the tool's, and makes
--overwrite refuse the trace (simcore/trace/target.py)."""
ANNOTATIONS_FILE = "annotations.json"
USER_FILES = (ANNOTATIONS_FILE,)
"""Files the explorer writes inside a trace directory for the user (markers and notes,
explorer.model.annotations): the user's own work, so the tool may write them there (atomically)
but --overwrite refuses a trace holding one, as it refuses any file it did not write."""

# Arrow IPC file ("Feather v2") magic: the file starts with it (padded to 8 bytes)
# and ends with it.
ARROW_MAGIC = b"ARROW1"

STRING = pa.dictionary(pa.int32(), pa.string())
"""Low-cardinality strings (opcodes, kinds, dtypes) are dictionary encoded: small on
disk, zero-copy categoricals in pandas, and integer codes for colouring in the GUI."""

# Track kinds (tracks.kind). Readers must tolerate kinds they do not know.
# `collectives.kind` (and `ops.kind` of a collective op): what the simulator writes. Imported
# traces may add others a profiler names (broadcast, reduce, barrier): IMPORTED_COLLECTIVE_KINDS.
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
IMPORTED_COLLECTIVE_KINDS = COLLECTIVE_KINDS + ("broadcast", "reduce", "barrier")
TRACK_KINDS = (
    "tensor",         # Tensor engine: LoadStationary (the Neuron profiler's `Tensor` row)
    "tensor_matrix",  # Tensor engine: MultiplyMoving (`TensorMatrix`)
    "vector",         # Vector engine
    "scalar",         # Scalar (activation) engine
    "gpsimd",         # GpSimd engine
    "sync",           # Sync engine (semaphores, DMA triggers)
    "dma_queue",      # one DMA queue (`qSyncIO0`, ...)
    "cc",             # collective-communication activity of one rank
    "kernel",         # the kernels that ran on one core
    "counter",        # a sampled series in `counters`
    "runtime",        # the Neuron runtime's work on one core: step start, barriers between ops, kernel launches (1.1)
)

# Counter track names (tracks.name of kind "counter") that analyses look for.
# core = -1 marks chip-level counters.
COUNTER_HBM_READ = "HBM Read Bandwidth"    # GB/s, chip-level
COUNTER_HBM_WRITE = "HBM Write Bandwidth"  # GB/s, chip-level
COUNTER_SBUF = "State Buffer Usage"        # bytes, per core
COUNTER_PSUM = "PSUM Usage"                # bytes, per core
COUNTER_THROTTLE = "Throttling"            # % of the tensor engine's full rate allowed (100 = unthrottled), per core
COUNTER_LINK = "Link Bandwidth"            # GB/s, chip-level, all chip-to-chip links
COUNTER_NAMES = (COUNTER_HBM_READ, COUNTER_HBM_WRITE, COUNTER_SBUF, COUNTER_PSUM, COUNTER_THROTTLE, COUNTER_LINK)

# Opcodes with a meaning analyses rely on.
OPCODE_TRANSPOSE = "Transpose"  # tensor-engine transpose; its flops are excluded from MFU


@dataclass(frozen=True)
class Column:
    """One column: its Arrow type, unit and meaning."""

    name: str
    type: pa.DataType
    unit: str
    doc: str
    required: bool = True

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=False)


@dataclass(frozen=True)
class TableSpec:
    """One table of a trace.

    `track_column`/`start_column`/`duration_column` name the interval columns the
    reader checks: durations are non-negative and starts never decrease within a track.
    """

    name: str
    doc: str
    columns: tuple[Column, ...]
    track_column: str | None = None
    start_column: str | None = None
    duration_column: str | None = None
    since: str | None = None
    """The minor version that added the table (None: every v1 trace has it). A trace written
    before it may lack it; readers then treat it as absent, never as an error."""

    @property
    def required(self) -> bool:
        return self.since is None

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([c.field for c in self.columns])

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


def _c(name: str, type_: pa.DataType, unit: str, doc: str, required: bool = True) -> Column:
    return Column(name, type_, unit, doc, required)


I32, I64, F64 = pa.int32(), pa.int64(), pa.float64()

TRACKS = TableSpec(
    "tracks",
    "One row per timeline row. Every other table refers to tracks by `track_id`.",
    (
        _c("track_id", I32, "", "Dense id 0..n-1, unique in the trace."),
        _c("chip", I32, "", "Chip (rank) index, 0-based."),
        _c("core", I32, "", "Physical NeuronCore index on the chip; -1 for chip-level rows (HBM counters, collectives)."),
        _c("lcore", I32, "", "Logical NeuronCore on the chip the row belongs to (a rank of a parallel capture; with "
           "LNC=2 logical core l is physical cores 2l and 2l+1, as Neuron Explorer's `pcore_idx` counts within it); -1 "
           "for chip-wide rows and captures without ranks. Optional (1.2): readers treat a missing column as all -1.",
           required=False),
        _c("kind", STRING, "", "What the row shows: " + ", ".join(TRACK_KINDS) + "."),
        _c("name", STRING, "", "Display name, the Neuron profiler's where one exists (`TensorMatrix`, `Vector`, `qSyncIO0`, `HBM Read Bandwidth`)."),
        _c("unit", STRING, "", "Unit of a counter track's values (`GB/s`, `bytes`, `%`); empty for interval tracks."),
    ),
)

INSTRUCTIONS = TableSpec(
    "instructions",
    "Engine-level instructions: one interval on one engine track. Writers should group rows by `track_id` (the simulator does); within a track, starts never decrease.",
    (
        _c("id", I64, "", "Event id, unique across `instructions` and `dma` (flows refer to it)."),
        _c("track_id", I32, "", "The engine track that executed it."),
        _c("start_ns", I64, "ns", "Start, from trace start."),
        _c("dur_ns", I64, "ns", "Duration, >= 0."),
        _c("opcode", STRING, "", "Instruction name (`MultiplyMoving`, `LoadStationary`, `TensorTensor`, `Activation`, `Exponential`, ...)."),
        _c("kernel_id", I64, "", "The kernel it belongs to (`kernels.kernel_id`), -1 if none."),
        _c("flops", I64, "FLOP", "Floating-point operations executed (hardware FLOPs, not normalised)."),
        _c("bytes", I64, "bytes", "Bytes read plus written by the instruction (SBUF/PSUM)."),
        _c("dtype", STRING, "", "Operand data type (`bf16`, `fp8`, `mxfp8`, `mxfp4`, `fp32`, ...)."),
    ),
    track_column="track_id",
    start_column="start_ns",
    duration_column="dur_ns",
)

DMA = TableSpec(
    "dma",
    "DMA transfers, one row per transfer on a DMA queue track.",
    (
        _c("id", I64, "", "Event id, unique across `instructions` and `dma`."),
        _c("track_id", I32, "", "The DMA queue track."),
        _c("start_ns", I64, "ns", "Start of the transfer (after descriptor and semaphore latency)."),
        _c("dur_ns", I64, "ns", "Duration, >= 0."),
        _c("bytes", I64, "bytes", "Bytes moved."),
        _c("partitions", I32, "", "SBUF partitions the transfer spans; bytes / partitions is the per-partition size (transfers under 2 KiB per partition are inefficient)."),
        _c("src", STRING, "", "Source memory: `hbm`, `sbuf`, `psum`, `remote`."),
        _c("dst", STRING, "", "Destination memory: `hbm`, `sbuf`, `psum`, `remote`."),
        _c("kernel_id", I64, "", "The kernel it belongs to, -1 if none."),
    ),
    track_column="track_id",
    start_column="start_ns",
    duration_column="dur_ns",
)

KERNELS = TableSpec(
    "kernels",
    "Kernels (the launch unit: one op lowered for one core), the level under `ops` in the drill-down.",
    (
        _c("kernel_id", I64, "", "Unique id."),
        _c("track_id", I32, "", "The `kernel` track of the core it ran on."),
        _c("chip", I32, "", "Chip index."),
        _c("core", I32, "", "NeuronCore index."),
        _c("op_id", I64, "", "The op it implements (`ops.op_id`), -1 if none."),
        _c("name", STRING, "", "Kernel name (`matmul_qkv`, `flash_attention`, ...)."),
        _c("start_ns", I64, "ns", "Start."),
        _c("dur_ns", I64, "ns", "Duration, >= 0."),
        _c("flops", I64, "FLOP", "Hardware FLOPs executed (not normalised)."),
        _c("model_flops", I64, "FLOP", "FLOPs the model needs (excludes recompute, transposes and padding)."),
        _c("hbm_read_bytes", I64, "bytes", "Bytes read from HBM."),
        _c("hbm_write_bytes", I64, "bytes", "Bytes written to HBM."),
        _c("dtype", STRING, "", "Compute data type of its matmuls (or of its main operand)."),
    ),
    track_column="track_id",
    start_column="start_ns",
    duration_column="dur_ns",
)

OPS = TableSpec(
    "ops",
    "The hierarchy above kernels: model -> layer -> op, linked by `parent_id`.",
    (
        _c("op_id", I64, "", "Unique id."),
        _c("parent_id", I64, "", "Parent `op_id`, -1 for the root (the model)."),
        _c("level", STRING, "", "`model`, `layer` or `op`."),
        _c("name", STRING, "", "Display name (`Llama-3.1-8B`, `layer 3`, `attention.qkv_proj`)."),
        _c("kind", STRING, "", "Op kind (`matmul`, `attention`, `rmsnorm`, `moe_router`, `all_reduce`, ...); the level name for model/layer rows."),
        _c("start_ns", I64, "ns", "Start of its first kernel."),
        _c("dur_ns", I64, "ns", "End of its last kernel minus start."),
    ),
)

COLLECTIVES = TableSpec(
    "collectives",
    "One row per participating rank of each collective. A rank arrives when its own work is done and waits until the last rank arrives.",
    (
        _c("collective_id", I64, "", "Id of the collective (shared by its ranks)."),
        _c("track_id", I32, "", "The rank's `cc` track."),
        _c("chip", I32, "", "Chip index of the rank."),
        _c("rank", I32, "", "Rank within the group."),
        _c("group_size", I32, "", "Ranks in the group."),
        _c("kind", STRING, "", ", ".join(f"`{k}`" for k in COLLECTIVE_KINDS) + "."),
        _c("algorithm", STRING, "", "`ring`, `mesh`, `hierarchical`, ..."),
        _c("op_id", I64, "", "The op that issued it, -1 if none."),
        _c("bytes", I64, "bytes", "Message size per rank (the collective's S)."),
        _c("arrive_ns", I64, "ns", "When the rank was ready."),
        _c("start_ns", I64, "ns", "When the transfer started (the last rank's arrival)."),
        _c("end_ns", I64, "ns", "When the rank's transfer finished."),
        _c("wait_ns", I64, "ns", "start_ns - arrive_ns."),
        _c("algo_bw_gbps", F64, "GB/s", "Algorithm bandwidth: bytes / (end - start)."),
        _c("bus_bw_gbps", F64, "GB/s", "Bus bandwidth: algorithm bandwidth x the kind's factor (2(p-1)/p for all-reduce, (p-1)/p otherwise)."),
        _c("hbm_read_bytes", I64, "bytes", "HBM bytes the rank's DMA read for it (what it sent and reduced); -1 when unknown. "
           "Optional (1.2).", required=False),
        _c("hbm_write_bytes", I64, "bytes", "HBM bytes written into the rank for it (what it received and reduced); -1 "
           "when unknown. Optional (1.2).", required=False),
    ),
    track_column="track_id",
    start_column="arrive_ns",
)

COUNTERS = TableSpec(
    "counters",
    "Sampled series. A value holds from its `time_ns` until the track's next sample.",
    (
        _c("track_id", I32, "", "The `counter` track (its `name` and `unit` say what is measured)."),
        _c("time_ns", I64, "ns", "Sample time."),
        _c("value", F64, "track unit", "Value in the track's unit."),
    ),
    track_column="track_id",
    start_column="time_ns",
)

FLOWS = TableSpec(
    "flows",
    "Dependency edges between events (semaphore waits, data dependencies).",
    (
        _c("src_id", I64, "", "Event id (`instructions.id` or `dma.id`) that must finish first."),
        _c("dst_id", I64, "", "Event id that waited for it."),
        _c("kind", STRING, "", "`semaphore`, `data`, ..."),
    ),
)

ALLOCATION_KINDS = ("weights", "activations", "kv_cache", "accumulators", "scratch", "optimizer_state", "gradients")
ALLOCATION_MEMORIES = ("sbuf", "psum")

SBUF_ALLOCATIONS = TableSpec(
    "sbuf_allocations",
    "The SBUF and PSUM buffers each kernel allocates on an instruction-detail core (1.4): one row per tensor and "
    "buffer slot (a triple-buffered stream is three rows), as the simulator's lowering sized them from its tiles, "
    "blocking and multi-buffering. A kernel's SBUF rows add up to its `State Buffer Usage` sample, its PSUM rows to "
    "its `PSUM Usage` one (a grouped matmul's problems, and a fused kernel's stages when they do not all fit, take "
    "turns through the core's memory: the largest of them adds up to those). At no instant do a core's allocations of one memory exceed it, in bytes or in any partition, "
    "nor do two of them hold the same address of a partition. Traces before 1.4 have no such table; an imported "
    "trace has it empty.",
    (
        _c("chip", I32, "", "Chip index."),
        _c("core", I32, "", "NeuronCore index on the chip."),
        _c("memory", STRING, "", "`sbuf` or `psum`."),
        _c("partition_start", I32, "", "First partition the buffer spans."),
        _c("partitions", I32, "", "Partitions it spans, from `partition_start`."),
        _c("address", I64, "bytes", "Byte offset of the buffer in each of its partitions (PSUM: a bank boundary)."),
        _c("bytes", I64, "bytes", "Bytes allocated over all its partitions (`bytes / partitions` in each, rounded up)."),
        _c("start_ns", I64, "ns", "Start of the first instruction of the program range that allocates it (the kernel, or one problem of a grouped matmul)."),
        _c("end_ns", I64, "ns", "End of that range's last instruction (>= `start_ns`)."),
        _c("kernel_id", I64, "", "The kernel that allocated it (`kernels.kernel_id`)."),
        _c("tensor", STRING, "", "What it holds, by the lowering's name (`A^T block [2/3]`, `B block [1/2]`, `K^T (resident, 2 owners)`, `exp(S - max) [4/5]`)."),
        _c("kind", STRING, "", ", ".join(f"`{k}`" for k in ALLOCATION_KINDS) + "."),
    ),
    since="1.4",
)

TABLES: dict[str, TableSpec] = {
    t.name: t for t in (TRACKS, INSTRUCTIONS, DMA, KERNELS, OPS, COLLECTIVES, COUNTERS, FLOWS, SBUF_ALLOCATIONS)
}
"""Every table of format v1. A writer writes every table (empty ones it has no rows for); a reader
requires those without `since` and treats a missing later one as absent."""

PARTITION_KEY = "chip"
"""Big tables may be split per chip: `<table>/chip=<n>/part-<k>.arrow` (Hive style)."""


def spec(name: str) -> TableSpec:
    """The spec of a table, or a one-sentence error for an unknown name."""
    from simcore.errors import UserError

    try:
        return TABLES[name]
    except KeyError:
        raise UserError(f"unknown table '{name}'; a trace has: {', '.join(TABLES)}.") from None


def plain_relative(name: object) -> bool:
    """A file name meta.json may give a table: a relative path inside the trace directory
    (`instructions.arrow`, `instructions/chip=3/part-0.arrow`), never absolute, never with
    '..', '.', an empty part, a backslash or a NUL."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def parse_version(text: object) -> tuple[int, int] | None:
    """'1.0' -> (1, 0); None when `text` is not a MAJOR.MINOR string."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])
