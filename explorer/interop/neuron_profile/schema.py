"""Neuron Explorer's profile tables (schema 7.4.0, Neuron SDK 2.31) as data.

One place names every table and field this project reads or writes, with the type,
unit and required flag the Neuron SDK's `profile-schema-reference.rst` gives them; the
reader checks profiles against it, the exporter writes exactly these types, and the
SchemaFields table is generated from it. Fields Neuron Explorer does not have carry
the prefix `trnx_` (our extensions, so an export -> import round trip is exact; tools
that read Neuron profiles ignore unknown fields, as the schema's minor-version rule
allows). Descriptions are short paraphrases; the SDK page has the full text.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = "7.4.0"
SCHEMA_MAJOR = 7
EXTENSION_PREFIX = "trnx_"

# Neuron schema type -> the Arrow type we write (the reader accepts any width of the same kind)
ARROW_TYPES: dict[str, pa.DataType] = {
    "int64": pa.int64(),
    "int32": pa.int32(),
    "float": pa.float64(),  # "number (float)": written as double, read from float32 or float64
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "int64[]": pa.list_(pa.int64()),
}
# Neuron's (field_type, field_format) pair for SchemaFields
SCHEMA_TYPE = {
    "int64": ("integer", "int64"), "int32": ("integer", "int32"), "float": ("number", "float"),
    "double": ("number", "double"), "string": ("string", ""), "boolean": ("boolean", ""),
    "int64[]": ("array", "int64"),
}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a key of ARROW_TYPES
    unit: str  # "nanoseconds", "seconds", "bytes", "bytes_per_second", "percent", "gigahertz", "flops", "cycles" or ""
    required: bool
    doc: str

    @property
    def arrow(self) -> pa.DataType:
        return ARROW_TYPES[self.type]


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.required)


def _f(spec: str, doc: str = "") -> Field:
    """'name type unit Y|N' -> Field (unit '-' for none)."""
    name, type_, unit, req = spec.split()
    return Field(name, type_, "" if unit == "-" else unit, req == "Y", doc)


_PCORE = _f("pcore_idx int64 - N", "Physical NeuronCore within the Logical NeuronCore (0 or 1 with LNC=2).")
_T3 = (_f("start_ts int64 nanoseconds Y", "Start."), _f("end_ts int64 nanoseconds Y", "End."),
       _f("duration_ns int64 nanoseconds Y", "Duration."))

INSTRUCTION = Table("Instruction", "Instructions executed on NeuronCore compute engines.", (
    *_T3,
    _f("engine string - Y", "Compute engine that executed the instruction (tensor, vector, scalar, gpsimd, sync)."),
    _f("timeline_track string - N", "Timeline row in the Neuron Explorer UI (TensorMatrix, ...)."),
    _PCORE,
    _f("opcode string - Y", "Opcode."),
    _f("operands string - Y", "Operands."),
    _f("id int64 - Y", "Unique id of this instruction execution."),
    _f("pc int64 - Y", "Runtime program counter: the instruction's index on its engine."),
    _f("penguin_id string - N", "Penguin id with context."),
    _f("raw_penguin_id int64 - N", "Raw penguin id."),
    _f("bir_id string - Y", "BIR instruction id."),
    _f("raw_bir_id int64 - N", "Raw BIR id."),
    _f("evt_wait_time_ns int64 nanoseconds N", "Time waiting for events or semaphores."),
    _f("hlo_name string - N", "HLO operation name."),
    _f("raw_hlo_id int64 - N", "HLO-level id."),
    _f("raw_framework_id int64 - N", "Framework-level id."),
    _f("layer string - N", "Name from the framework-level debug info."),
    _f("hbm_read_bytes int64 - N", "Bytes read from HBM by this instruction."),
    _f("hbm_write_bytes int64 - N", "Bytes written to HBM by this instruction."),
    _f("sbuf_read_bytes int64 - N", "Bytes read from SBUF."),
    _f("sbuf_write_bytes int64 - N", "Bytes written to SBUF."),
    _f("psum_read_bytes int64 - N", "Bytes read from PSUM."),
    _f("psum_write_bytes int64 - N", "Bytes written to PSUM."),
    _f("raw_flops int64 - N", "FLOPs (a MAC counts 2)."),
    _f("adjusted_flops int64 - N", "BF16-equivalent FLOPs."),
    _f("flops_transpose int64 - N", "Transpose FLOPs (TRANSPOSE instructions only, else 0)."),
    _f("adjusted_flops_transpose int64 - N", "BF16-equivalent transpose FLOPs."),
    _f("trnx_bytes int64 bytes N", "trnx: SBUF/PSUM bytes read plus written (not split by memory)."),
    _f("trnx_dtype string - N", "trnx: operand data type."),
    _f("trnx_kernel_id int64 - N", "trnx: the kernel (PenguinInstruction.trnx_kernel_id) it belongs to, -1 if none."),
))

DMA_PACKET = Table("DmaPacket", "DMA packets moving data within a Neuron Device.", (
    *_T3, _PCORE,
    _f("id int64 - Y", "Unique id of the packet."),
    _f("packet_idx int32 - Y", "Index of the packet within its transfer."),
    _f("packet_aggregation_id int64 - Y", "The DmaPacketAggregated row (transfer) it belongs to."),
    _f("read_bytes int64 bytes Y", "Bytes read."),
    _f("write_bytes int64 bytes Y", "Bytes written."),
    _f("transfer_bytes int64 bytes Y", "Bytes transferred."),
    _f("throughput float bytes_per_second Y", "transfer_bytes / duration."),
    _f("queue_type string - Y", "DmaQueueType: instruction, input, output, data, software_dynamic, hardware_dynamic, unknown."),
    _f("queue_name string - N", "Queue name."),
    _f("crc int64 - Y", "CRC of the data."),
))

DMA_AGGREGATED = Table("DmaPacketAggregated", "DMA transfers: the packets that together move one or more tensors.", (
    *_T3,
    _f("id int64 - Y", "Unique id (DmaPacket.packet_aggregation_id)."),
    _PCORE,
    _f("block_id int32 - Y", "Compiler block id."),
    _f("queue_idx int64 - Y", "Queue index."),
    _f("queue_name string - Y", "Queue name."),
    _f("queue_type string - N", "DmaQueueType."),
    _f("op string - Y", "DMA operation type."),
    _f("variable string - Y", "Tensor name."),
    _f("read_bytes int64 bytes Y", "Bytes read."),
    _f("write_bytes int64 bytes Y", "Bytes written."),
    _f("transfer_bytes int64 bytes Y", "Bytes transferred."),
    _f("throughput float bytes_per_second Y", "transfer_bytes / duration."),
    _f("source string - Y", "Source memory, e.g. [SB]."),
    _f("dest string - Y", "Destination memory."),
    _f("semaphore_id string - Y", "Semaphore used for synchronisation."),
    _f("read_sbuf_partitions string - Y", "SBUF partitions read."),
    _f("read_num_sbuf_partitions int32 - Y", "Number of SBUF partitions read."),
    _f("read_shape string - Y", "Shape read."),
    _f("read_offset string - Y", "Offset read."),
    _f("read_steps string - Y", "Read strides."),
    _f("write_sbuf_partitions string - Y", "SBUF partitions written."),
    _f("write_num_sbuf_partitions int32 - Y", "Number of SBUF partitions written."),
    _f("write_shape string - Y", "Shape written."),
    _f("write_offset string - Y", "Offset written."),
    _f("write_steps string - Y", "Write strides."),
    _f("trnx_kernel_id int64 - N", "trnx: the kernel the transfer belongs to, -1 if none."),
))

FLOW = Table("Flow", "Dependency edges between rows of timeline tables.", (
    _f("in_id int64 - Y", "Id of the predecessor row."),
    _f("out_id int64 - Y", "Id of the successor row."),
    _f("in_table string - Y", "Table of the predecessor (instruction, dma_block)."),
    _f("out_table string - Y", "Table of the successor."),
    _f("dependency_type string - N", "Kind of dependency."),
    _f("gap_time int64 nanoseconds N", "Successor start minus predecessor end."),
))

CC_OP = Table("CcOp", "Collective operations executed by the collective engines.", (
    *_T3,
    _f("operation string - Y", "AllGather, AllReduce, ReduceScatter, AllToAll, ..."),
    _f("algorithm string - Y", "Ring, Mesh, ..."),
    _f("num_elements int64 - Y", "Elements in the operation."),
    _f("dtype string - Y", "Element type."),
    _f("op_id int64 - Y", "Id of the collective operation."),
    _f("stream_id int64 - Y", "Stream of the operation in this profile."),
    _f("stream_index int64 - Y", "Stream index relative to the execution."),
    _f("trigger_engine string - Y", "Engine that triggered it."),
    _f("input_size int64 bytes N", "Input bytes."),
    _f("output_size int64 bytes N", "Output bytes."),
    _f("algorithm_bandwidth float bytes_per_second N", "max(input_size, output_size) / duration."),
    _f("bus_bandwidth float bytes_per_second N", "Algorithm bandwidth times the operation's bus factor."),
    _f("trigger_start_ts int64 nanoseconds N", "Start of the instruction that triggered it."),
    _f("cc_trigger_start_delay int64 nanoseconds N", "Delay from trigger to the start of execution."),
    _f("replica_group_id int64 - N", "Replica group id."),
    _f("replica_group string - N", "Participating ranks, e.g. [[0, 1, 2, 3]]."),
    _f("trnx_track_idx int64 - N", "trnx: the row of TrnxTracks holding this rank's part (a chip's ranks each have one)."),
    _f("trnx_rank int64 - N", "trnx: the rank's position in its group (the trace's collectives.rank)."),
))

CC_INSTRUCTION = Table("CcInstruction", "Instructions executed by the CC-Cores.", (
    *_T3,
    _f("core_idx int64 - Y", "CC-Core that executed it."),
    _f("description string - Y", "Instruction name."),
    _f("trigger_engine string - N", "Engine that triggered it."),
    _f("trigger_start_ts int64 nanoseconds N", "Start of the triggering instruction."),
))

ACTIVE_TIME = Table("ActiveTime", "When each engine is active: the merged intervals of its instructions.", (
    _f("start_ts int64 nanoseconds Y", "Start."), _f("end_ts int64 nanoseconds Y", "End."),
    _f("engine string - Y", "Engine."),
    _f("pcore_idx int64 - Y", "Physical NeuronCore within the LNC."),
    _f("duration_ns int64 nanoseconds Y", "Duration."),
))


def _usage(name: str, doc: str, extra: tuple[Field, ...]) -> Table:
    return Table(name, doc, (_f("timestamp int64 nanoseconds Y", "Sample time."), *extra, _PCORE))


HBM_USAGE = _usage("HbmUsage", "HBM throughput over time.", (
    _f("current_throughput float bytes_per_second Y", "HBM throughput at this time."),
    _f("total_transfer_bytes int64 bytes Y", "Bytes transferred since the start of the profile."),
))
DMA_USAGE = _usage("DmaUsage", "DMA throughput over time.", (
    _f("current_throughput float bytes_per_second Y", "DMA throughput at this time."),
    _f("total_transfer_bytes int64 bytes Y", "Bytes transferred since the start of the profile."),
))
SBUF_USAGE = _usage("SbufUsage", "State Buffer partition utilisation.", (
    _f("avg_util_percent float percent N", "Average over partitions."),
    *(_f(f"partition_{p}_util_percent float percent N", f"Partition {p}.") for p in (0, 32, 64, 96)),
))
PSUM_USAGE = _usage("PsumUsage", "PSUM bank utilisation.", (
    _f("avg_util_percent float percent N", "Average over banks."),
    *(_f(f"bank_{b}_util_percent float percent N", f"Bank {b}.") for b in range(8)),
))

THROTTLE = Table("Throttle", "Thermal or power throttling events.", (
    _f("duration int64 nanoseconds Y", "Duration."),
    _f("k int32 - Y", "Allowed utilisation level: the limit is k / n."),
    _f("n int32 - Y", "Maximum utilisation level."),
    _f("timestamp int64 nanoseconds Y", "Start."),
    _f("type string - Y", "activity_0, activity_1, unknown."),
    _PCORE,
))

_HIER_IDS = tuple(_f(f"{k} int64 - Y", d) for k, d in (
    ("id", "Id of the corresponding instruction."), ("raw_bir_id", "BIR-level id."),
    ("raw_penguin_id", "Penguin-level id."), ("raw_hlo_id", "HLO-level id."), ("raw_framework_id", "Framework-level id.")))
_HIER_TIME = (
    _f("start_ts int64 nanoseconds Y", "Earliest start of its instructions."),
    _f("end_ts int64 nanoseconds Y", "Latest end of its instructions."),
    _f("time_intervals string - Y", "Merged intervals, [[start, end], ...]."),
    _f("element_count_per_interval int64[] - Y", "Elements processed per interval."),
    _f("transpose_element_count_per_interval int64[] - Y", "Transpose elements per interval."),
    _f("hbm_transfer_size_per_interval int64[] bytes Y", "HBM bytes per interval."),
    _f("hbm_read_bytes int64 bytes Y", "HBM bytes read."),
    _f("hbm_write_bytes int64 bytes Y", "HBM bytes written."),
)
_TREE = (
    _f("trnx_op_id int64 - N", "trnx: the op (ops.op_id) or kernel id of this row."),
    _f("trnx_parent_id int64 - N", "trnx: parent op id."),
    _f("trnx_kind string - N", "trnx: op kind."),
)
FRAMEWORK_INSTRUCTION = Table("FrameworkInstruction", "Framework-level hierarchy rows (children: HLO).", (
    *_HIER_IDS, _f("framework_name string - N", "Framework operation name."), *_HIER_TIME, *_TREE))
HLO_INSTRUCTION = Table("HloInstruction", "HLO-level hierarchy rows (parent: framework, children: penguin).", (
    *_HIER_IDS, _f("hlo_name string - Y", "HLO operation name."), *_HIER_TIME, *_TREE))
PENGUIN_INSTRUCTION = Table("PenguinInstruction", "Penguin-level hierarchy rows (parent: HLO, children: BIR).", (
    *_HIER_IDS, _f("penguin_name string - Y", "Penguin operation name."), *_HIER_TIME,
    _f("trnx_kernel_id int64 - N", "trnx: kernel id."),
    _f("trnx_pcore_idx int64 - N", "trnx: physical core the kernel ran on."),
    _f("trnx_op_id int64 - N", "trnx: the op it implements."),
    _f("trnx_flops int64 - N", "trnx: hardware FLOPs."),
    _f("trnx_model_flops int64 - N", "trnx: model FLOPs."),
    _f("trnx_dtype string - N", "trnx: compute data type."),
))
BIR_INSTRUCTION = Table("BirInstruction", "BIR-level hierarchy rows (parent: penguin, children: instructions).", (
    *_HIER_IDS, _f("bir_name string - Y", "BIR instruction name."),
    _f("modular_flow_invocation_idx int64 - Y", "Which call of the function."), _PCORE, *_HIER_TIME))

OPCODE_SUMMARY = Table("OpcodeSummary", "Instruction counts and time per (engine, opcode).", (
    _f("engine string - Y", "Engine."), _f("opcode string - Y", "Opcode."),
    _f("instruction_count int64 - Y", "Instructions."),
    _f("instruction_time_ns int64 nanoseconds Y", "Summed duration (overlaps added)."),
    _f("active_time_ns int64 nanoseconds Y", "Time at least one runs (overlaps merged)."),
    _f("active_time_percent float - Y", "active_time_ns / total execution time, in percent."),
))

_ENGINES5 = ("tensor", "vector", "scalar", "sync", "gpsimd")
SUMMARY = Table("Summary", "Performance metrics of the whole profile.", (
    _f("total_time float seconds N", "On-device execution time."),
    _f("model_flops int64 flops N", "Useful tensor-engine FLOPs."),
    _f("hardware_flops int64 flops N", "FLOPs of every tensor-engine instruction."),
    _f("transpose_flops int64 flops N", "FLOPs of transposes."),
    _f("adjusted_hardware_flops int64 flops N", "BF16-equivalent hardware FLOPs."),
    _f("adjusted_transpose_flops int64 flops N", "BF16-equivalent transpose FLOPs."),
    _f("mm_arithmetic_intensity float - N", "(hardware_flops - transpose_flops) / HBM bytes."),
    _f("peak_flops_bandwidth_ratio float - N", "Peak tensor FLOP/s / peak HBM bytes/s."),
    _f("dma_active_time float seconds N", "Time at least one DMA transfers."),
    _f("dma_active_time_percent float percent N", "dma_active_time / total time."),
    _f("dma_transfer_average_bytes float bytes N", "dma_transfer_total_bytes / dma_transfer_count."),
    _f("dma_transfer_count int64 - N", "DMA transfers."),
    _f("dma_transfer_total_bytes int64 bytes N", "Bytes of all DMA transfers."),
    _f("mbu_estimated_percent float percent N", "HBM bytes / total_time / HBM bandwidth."),
    _f("hbm_write_bytes int64 bytes N", "Bytes written to HBM."),
    _f("hbm_read_bytes int64 bytes N", "Bytes read from HBM."),
    _f("mfu_estimated_percent float percent N", "Model FLOPs utilisation."),
    _f("hfu_estimated_percent float percent N", "Hardware FLOPs utilisation."),
    *(f for e in _ENGINES5 for f in (
        _f(f"{e}_engine_instruction_time float seconds N", f"Summed duration of {e} instructions."),
        _f(f"{e}_engine_active_time float seconds N", f"Time the {e} engine runs at least one instruction."),
        _f(f"{e}_engine_active_time_percent float percent N", f"{e}_engine_active_time / total time."),
        _f(f"{e}_engine_instruction_count int64 - N", f"{e} instructions."))),
    _f("cc_op_time float seconds N", "Summed duration of collective operations."),
    _f("cc_op_active_time float seconds N", "Time at least one collective runs."),
    _f("cc_op_active_time_percent float percent N", "cc_op_active_time / total time."),
    _f("cc_op_count int64 - N", "Collective operations."),
    _f("total_exec_time float seconds N", "First to last non-setup instruction or DMA."),
    _f("total_active_time float seconds N", "Time any engine, DMA or collective is active."),
    _f("total_active_time_percent float percent N", "total_active_time / total time."),
))

METADATA = Table("Metadata", "The profile's schema version and the system it was captured on.", (
    _f("profile_schema_version string - Y", "MAJOR.MINOR.PATCH of the profile schema."),
    _f("ntff_version int32 - Y", "Version of the raw NTFF profile."),
    _f("num_physical_cores int32 - Y", "Physical NeuronCores in the Logical NeuronCore."),
    _f("vnc_enabled boolean - Y", "Logical NeuronCores of several physical cores."),
    _f("first_hw_timestamp int64 nanoseconds Y", "First timestamp."),
    _f("last_hw_timestamp int64 nanoseconds Y", "Last timestamp."),
    _f("first_ts string - Y", "First timestamp, Unix time."),
    _f("last_ts string - Y", "Last timestamp, Unix time."),
    _f("dma_ddr_bandwidth float bytes_per_second Y", "DMA bandwidth of one physical core."),
    _f("num_dma_engines_per_neuroncore int32 - Y", "DMA engines per physical core."),
    _f("hbm_ddr_bandwidth float bytes_per_second Y", "HBM bandwidth of one HBM stack."),
    _f("tensor_engine_num_rows int64 - Y", "Systolic array rows."),
    _f("tensor_engine_num_cols int64 - Y", "Systolic array columns."),
    _f("tensor_engine_clock_freq float gigahertz Y", "Tensor engine clock."),
    _f("vector_engine_clock_freq float gigahertz Y", "Vector engine clock."),
    _f("vector_engine_num_channels int64 - Y", "Vector engine channels."),
    _f("scalar_engine_clock_freq float gigahertz Y", "Scalar engine clock."),
    _f("scalar_engine_num_channels int64 - Y", "Scalar engine channels."),
    _f("gpsimd_engine_clock_freq float gigahertz Y", "GpSimd engine clock."),
    _f("gpsimd_engine_num_channels int64 - Y", "GpSimd engine channels."),
    _f("neuroncore_clock_freq float gigahertz Y", "NeuronCore clock."),
    _f("ticks_per_nanosec int64 - Y", "Profile ticks per nanosecond."),
    _f("instance_type string - N", "Instance type."),
    _f("neuroncore_idx int64 - N", "Index of this NeuronCore."),
    _f("neuron_device_idx int64 - N", "Index of this Neuron Device."),
    _f("profile_name string - N", "User-chosen name of the profile."),
    _f("is_simulation boolean - N", "A post-scheduler simulation, not a measurement."),
    _f("trnx_hardware string - N", "trnx: the trace's hardware block (JSON)."),
    _f("trnx_workload string - N", "trnx: the trace's workload block (JSON)."),
    _f("trnx_chip int64 - N", "trnx: the chip this profile's NeuronCores are on."),
    _f("trnx_lcore int64 - N", "trnx: the logical core of the chip this profile holds (-1: the whole chip, a chip-wide program)."),
))

SCHEMA_FIELDS = Table("SchemaFields", "The schema of this profile, one row per (table, field).", (
    _f("table_name string - Y", "Table."), _f("table_description string - Y", "Table description."),
    _f("field_name string - Y", "Field."), _f("field_description string - Y", "Field description."),
    _f("field_type string - Y", "Type."), _f("field_required boolean - Y", "Required."),
    _f("field_format string - N", "Format (int64, float, ...)."), _f("field_unit string - N", "Unit."),
))

TRNX_TRACKS = Table("TrnxTracks", "trnx: every timeline row of the profile (the trace's `tracks`), so rows without events survive.", (
    _f("core int64 - Y", "Physical core of the chip, as in the trace (-1: chip-level)."), _f("kind string - Y", "Row kind."),
    _f("lcore int64 - N", "Logical core of the chip the row belongs to (-1: none; the trace's tracks.lcore)."),
    _f("name string - Y", "Row name."), _f("unit string - Y", "Counter unit ('' for interval rows)."),
))
TRNX_COUNTERS = Table("TrnxCounters", "trnx: the trace's counter samples exactly (Neuron's usage tables hold converted copies).", (
    _f("track_idx int64 - Y", "Row of TrnxTracks."), _f("time_ns int64 nanoseconds Y", "Sample time."),
    _f("value double - Y", "Value in the row's unit."),
))

TRNX_RUNTIME = Table("TrnxRuntime", "trnx: the runtime's work on each core (the trace's Runtime rows: barriers between ops, "
                     "kernel launches); Neuron Explorer shows the runtime in its system profile, not as device instructions.", (
    _f("track_idx int64 - Y", "Row of TrnxTracks."), _f("start_ts int64 nanoseconds Y", "Start."),
    _f("duration_ns int64 nanoseconds Y", "Duration."), _f("opcode string - Y", "What the runtime does (OpBarrier, KernelLaunch, ...)."),
))

TABLES: dict[str, Table] = {t.name: t for t in (
    INSTRUCTION, DMA_PACKET, DMA_AGGREGATED, FLOW, CC_OP, CC_INSTRUCTION, ACTIVE_TIME, HBM_USAGE, DMA_USAGE,
    SBUF_USAGE, PSUM_USAGE, THROTTLE, FRAMEWORK_INSTRUCTION, HLO_INSTRUCTION, PENGUIN_INSTRUCTION,
    BIR_INSTRUCTION, OPCODE_SUMMARY, SUMMARY, METADATA, SCHEMA_FIELDS, TRNX_TRACKS, TRNX_COUNTERS, TRNX_RUNTIME)}
"""The tables this project reads or writes (the SDK documents more: those are ignored on import)."""


def parse_version(text: object) -> tuple[int, int, int] | None:
    """'7.4.0' -> (7, 4, 0); None when not MAJOR.MINOR.PATCH."""
    if not isinstance(text, str):
        return None
    parts = text.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() and len(p) < 6 for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])
