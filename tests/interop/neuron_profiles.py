"""Neuron Explorer profile directories built from the documented schema (7.4.0), for tests.

`write_profile(dir, ...)` writes what a device profile of one rank holds: Instruction
(LNC=2 `pcore_idx`, absolute hardware timestamps, layers and HLO names, FLOPs, bytes),
DmaPacketAggregated and DmaPacket, Flow, CcOp (an all-reduce per layer, matched across
ranks by op_id), HbmUsage, DmaUsage, SbufUsage, PsumUsage, Throttle, Summary and
Metadata, plus what a newer minor version may add (an unknown table, an unknown field).
`missing_optional=True` leaves optional fields out or null. Every table is written with
pyarrow.parquet straight from the field lists below, never through the project's code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

T_BASE = 1_766_072_156_592_459_482  # absolute hardware time (ns since the Unix epoch)
ENGINES = (("tensor", "TensorMatrix", "MATMUL"), ("vector", "Vector", "TENSOR_TENSOR"),
           ("scalar", "Scalar", "ACTIVATE"), ("gpsimd", "GpSimd", "IOTA"), ("sync", "Sync", "DMA_TRIGGER"))
ROWS, COLS, CLOCK_GHZ, HBM_BPS = 128, 128, 2.4, 1.2e12


def _write(d: Path, name: str, cols: dict, types: dict[str, pa.DataType]) -> None:
    arrays = {k: pa.array(v, types[k]) for k, v in cols.items()}
    pq.write_table(pa.table(arrays), d / f"{name}.parquet")


def write_profile(d: Path, *, rank: int = 0, ranks: int = 1, lnc: int = 2, layers: int = 2, hlos: int = 3,
                  seed: int = 0, missing_optional: bool = False, skew_ns: int = 0,
                  schema_version: str = "7.4.0") -> Path:
    """One rank's profile directory; returns it."""
    rng = np.random.default_rng(seed + 17 * rank)
    d.mkdir(parents=True, exist_ok=True)
    I64, I32, F64, STR, BOOL = pa.int64(), pa.int32(), pa.float64(), pa.string(), pa.bool_()
    ins: dict[str, list] = {k: [] for k in (
        "start_ts", "end_ts", "duration_ns", "engine", "timeline_track", "pcore_idx", "opcode", "operands", "id", "pc",
        "bir_id", "hlo_name", "layer", "raw_flops", "adjusted_flops", "flops_transpose", "hbm_read_bytes",
        "hbm_write_bytes", "sbuf_read_bytes", "psum_write_bytes", "future_field")}
    dma: dict[str, list] = {k: [] for k in (
        "start_ts", "end_ts", "duration_ns", "id", "pcore_idx", "block_id", "queue_idx", "queue_name", "queue_type", "op",
        "variable", "read_bytes", "write_bytes", "transfer_bytes", "throughput", "source", "dest", "semaphore_id",
        "read_sbuf_partitions", "read_num_sbuf_partitions", "read_shape", "read_offset", "read_steps",
        "write_sbuf_partitions", "write_num_sbuf_partitions", "write_shape", "write_offset", "write_steps")}
    flows: dict[str, list] = {k: [] for k in ("in_id", "out_id", "in_table", "out_table", "dependency_type", "gap_time")}
    cc: dict[str, list] = {k: [] for k in (
        "start_ts", "end_ts", "duration_ns", "operation", "algorithm", "num_elements", "dtype", "op_id", "stream_id",
        "stream_index", "trigger_engine", "input_size", "algorithm_bandwidth", "bus_bandwidth", "trigger_start_ts",
        "cc_trigger_start_delay", "replica_group")}
    t0 = T_BASE + 5_000 + skew_ns
    t = t0
    next_id = 1000 * (rank + 1)  # ids are per profile, and overlap between ranks
    pcs = {}
    for layer in range(layers):
        for h in range(hlos):
            hlo = f"dot.{layer * hlos + h}" if h == 0 else f"fusion.{layer * hlos + h}"
            dtype_w = 0.5 if (h == 0 and layer % 2) else 1.0  # an fp8 matmul in odd layers
            ends = []
            for pcore in range(lnc):
                eng_t = {e: t + int(rng.integers(0, 50)) for e, _, _ in ENGINES}
                prev = None
                for step in range(int(rng.integers(3, 7))):
                    for engine, track, opcode in ENGINES:
                        if engine == "gpsimd" and step % 3:
                            continue
                        start = eng_t[engine] + int(rng.integers(0, 40))
                        dur = int(rng.integers(80, 400))
                        eng_t[engine] = start + dur
                        pc = pcs.setdefault((pcore, engine), 0)
                        pcs[(pcore, engine)] += 1
                        transpose = engine == "tensor" and step == 0
                        flops = 2 * 128 * 128 * int(rng.integers(64, 512)) if engine == "tensor" else 0
                        row = dict(start_ts=start, end_ts=start + dur, duration_ns=dur, engine=engine, timeline_track=track,
                                   pcore_idx=pcore, opcode="TRANSPOSE" if transpose else opcode, operands="", id=next_id,
                                   pc=pc, bir_id=f"sg0000:{next_id}", hlo_name=hlo, layer=f"layer_{layer}",
                                   raw_flops=flops, adjusted_flops=int(flops * dtype_w),
                                   flops_transpose=flops if transpose else 0,
                                   hbm_read_bytes=int(rng.integers(0, 4096)) if engine == "sync" else 0,
                                   hbm_write_bytes=int(rng.integers(0, 2048)) if engine == "sync" else 0,
                                   sbuf_read_bytes=dur * 64, psum_write_bytes=dur * 8 if engine == "tensor" else 0,
                                   future_field=step)
                        if missing_optional and (next_id % 7 == 0):
                            row["hlo_name"] = None  # attributed to "(no hlo)"
                        if missing_optional and (next_id % 5 == 0):
                            row["raw_flops"] = row["adjusted_flops"] = row["flops_transpose"] = None
                        for k, v in row.items():
                            ins[k].append(v)
                        if engine == "sync":  # the DMA this trigger starts: one transfer of two packets
                            ds = start + dur + int(rng.integers(10, 200))
                            dd = int(rng.integers(200, 1500))
                            nbytes = int(rng.integers(1, 64)) * 1024
                            parts = int(rng.choice([1, 16, 128]))
                            load = step % 2 == 0
                            drow = dict(start_ts=ds, end_ts=ds + dd, duration_ns=dd, id=next_id + 500_000, pcore_idx=pcore,
                                        block_id=step, queue_idx=step % 4, queue_name=f"qSyncIO{step % 4}",
                                        queue_type="data", op="read" if load else "write", variable=f"t{next_id}",
                                        read_bytes=nbytes, write_bytes=nbytes, transfer_bytes=nbytes,
                                        throughput=nbytes / dd * 1e9, source="[HBM]" if load else "[SB]",
                                        dest="[SB]" if load else "[OUTPUT]", semaphore_id="S[10] (qSyncIO0)",
                                        read_sbuf_partitions="" if load else "0-15",
                                        read_num_sbuf_partitions=0 if load else parts, read_shape="[1024, 512]",
                                        read_offset="[0x0]", read_steps="[1, 512]",
                                        write_sbuf_partitions="0-15" if load else "",
                                        write_num_sbuf_partitions=parts if load else 0, write_shape="[1024, 512]",
                                        write_offset="[0x0]", write_steps="[1, 512]")
                            for k, v in drow.items():
                                dma[k].append(v)
                            flows["in_id"].append(next_id)
                            flows["out_id"].append(next_id + 500_000)
                            flows["in_table"].append("instruction")
                            flows["out_table"].append("dma_block")
                            flows["dependency_type"].append("FLOW_DEPENDENCE")
                            flows["gap_time"].append(ds - (start + dur))
                        if prev is not None and engine == "vector":
                            flows["in_id"].append(prev)
                            flows["out_id"].append(next_id)
                            flows["in_table"].append("instruction")
                            flows["out_table"].append("instruction")
                            flows["dependency_type"].append(None if missing_optional else "SEMAPHORE")
                            flows["gap_time"].append(None)
                        if engine == "tensor":
                            prev = next_id
                        next_id += 1
                ends.append(max(max(eng_t.values()), max(dma["end_ts"][-1:] or [0])))
            t = max(ends) + int(rng.integers(100, 1000))
        # one all-reduce per layer, op_id shared by the ranks; a later rank waits less
        trig = t + int(rng.integers(0, 3000))
        start = max(trig, t + 2500)
        dur = int(rng.integers(2000, 6000))
        nel = 65536
        for k, v in dict(start_ts=start, end_ts=start + dur, duration_ns=dur, operation="AllReduce", algorithm="Ring",
                         num_elements=nel, dtype="bf16", op_id=layer, stream_id=0, stream_index=0, trigger_engine="Pool",
                         input_size=None if missing_optional else nel * 2,
                         algorithm_bandwidth=None if missing_optional else nel * 2 / dur * 1e9,
                         bus_bandwidth=None if missing_optional else nel * 2 / dur * 1e9 * 2 * (ranks - 1) / max(ranks, 1),
                         trigger_start_ts=trig, cc_trigger_start_delay=start - trig,
                         replica_group=None if missing_optional else str([list(range(ranks))])).items():
            cc[k].append(v)
        t = start + dur + 500
    last = t
    ins_types = dict(start_ts=I64, end_ts=I64, duration_ns=I64, engine=STR, timeline_track=STR, pcore_idx=I64, opcode=STR,
                     operands=STR, id=I64, pc=I64, bir_id=STR, hlo_name=STR, layer=STR, raw_flops=I64, adjusted_flops=I64,
                     flops_transpose=I64, hbm_read_bytes=I64, hbm_write_bytes=I64, sbuf_read_bytes=I64,
                     psum_write_bytes=I64, future_field=I32)
    if missing_optional:  # optional fields a profile may lack entirely
        for k in ("timeline_track", "sbuf_read_bytes", "psum_write_bytes"):
            ins.pop(k)
    _write(d, "Instruction", ins, ins_types)
    dma_types = {k: I64 for k in dma}
    dma_types.update({k: STR for k in ("queue_name", "queue_type", "op", "variable", "source", "dest", "semaphore_id",
                                      "read_sbuf_partitions", "read_shape", "read_offset", "read_steps",
                                      "write_sbuf_partitions", "write_shape", "write_offset", "write_steps")})
    dma_types.update(block_id=I32, read_num_sbuf_partitions=I32, write_num_sbuf_partitions=I32, throughput=F64)
    _write(d, "DmaPacketAggregated", dma, dma_types)
    pk = {"start_ts": [], "end_ts": [], "duration_ns": [], "pcore_idx": [], "id": [], "packet_idx": [],
          "packet_aggregation_id": [], "read_bytes": [], "write_bytes": [], "transfer_bytes": [], "throughput": [],
          "queue_type": [], "queue_name": [], "crc": []}
    for i in range(len(dma["id"])):
        s, e, n = dma["start_ts"][i], dma["end_ts"][i], dma["transfer_bytes"][i]
        mid = (s + e) // 2
        for j, (a, b, nb) in enumerate(((s, mid, n // 2), (mid, e, n - n // 2))):
            for k, v in dict(start_ts=a, end_ts=b, duration_ns=b - a, pcore_idx=dma["pcore_idx"][i], id=2 * dma["id"][i] + j,
                             packet_idx=j, packet_aggregation_id=dma["id"][i], read_bytes=nb, write_bytes=nb,
                             transfer_bytes=nb, throughput=nb / max(b - a, 1) * 1e9, queue_type="data",
                             queue_name=dma["queue_name"][i], crc=12345).items():
                pk[k].append(v)
    pk_types = {k: I64 for k in pk}
    pk_types.update(packet_idx=I32, throughput=F64, queue_type=STR, queue_name=STR)
    _write(d, "DmaPacket", pk, pk_types)
    _write(d, "Flow", flows, dict(in_id=I64, out_id=I64, in_table=STR, out_table=STR, dependency_type=STR, gap_time=I64))
    cc_types = {k: I64 for k in cc}
    cc_types.update(operation=STR, algorithm=STR, dtype=STR, trigger_engine=STR, replica_group=STR,
                    algorithm_bandwidth=F64, bus_bandwidth=F64)
    _write(d, "CcOp", cc, cc_types)
    # time series: every 2 us over the run
    ts = np.arange(t0, last, 2000, dtype=np.int64)
    for name, extra in (("HbmUsage", {"current_throughput": rng.uniform(0, 6e11, len(ts)),
                                      "total_transfer_bytes": np.cumsum(rng.integers(0, 1 << 20, len(ts)))}),
                        ("DmaUsage", {"current_throughput": rng.uniform(0, 1e11, len(ts)),
                                      "total_transfer_bytes": np.cumsum(rng.integers(0, 1 << 18, len(ts)))})):
        cols = {"timestamp": ts, **extra}
        types = {"timestamp": I64, "current_throughput": F64, "total_transfer_bytes": I64}
        if not missing_optional:
            cols["pcore_idx"] = np.zeros(len(ts), np.int64)
            types["pcore_idx"] = I64
        _write(d, name, cols, types)
    pcore = np.tile(np.arange(lnc), len(ts))
    tt = np.repeat(ts, lnc)
    sb = {"timestamp": tt, "pcore_idx": pcore, "avg_util_percent": rng.uniform(0, 90, len(tt))}
    sb_types = {"timestamp": I64, "pcore_idx": I64, "avg_util_percent": F64}
    for p in (0, 32, 64, 96):
        if not missing_optional:
            sb[f"partition_{p}_util_percent"] = rng.uniform(0, 100, len(tt))
            sb_types[f"partition_{p}_util_percent"] = F64
    _write(d, "SbufUsage", sb, sb_types)
    ps = {"timestamp": tt, "pcore_idx": pcore, "avg_util_percent": rng.uniform(0, 60, len(tt))}
    _write(d, "PsumUsage", ps, {"timestamp": I64, "pcore_idx": I64, "avg_util_percent": F64})
    th_ts = np.linspace(t0 + 1000, last - 6000, 3).astype(np.int64)  # three events, apart
    th = {"duration": [3000, 5000, 2000], "k": [3, 1, 7], "n": [4, 2, 8], "timestamp": th_ts.tolist(),
          "type": ["activity_0", "activity_0", "unknown"], "pcore_idx": [0, 1 % lnc, 0]}
    _write(d, "Throttle", th, dict(duration=I64, k=I32, n=I32, timestamp=I64, type=STR, pcore_idx=I64))
    total_s = (last - (T_BASE + skew_ns)) / 1e9
    summary = {"total_time": total_s, "hardware_flops": int(np.nansum(np.array(ins["raw_flops"], dtype=float))),
               "tensor_engine_instruction_count": ins["engine"].count("tensor"),
               "dma_transfer_count": len(dma["id"]), "cc_op_count": len(cc["op_id"]),
               "mfu_estimated_percent": 12.5, "future_metric": 1.0}
    _write(d, "Summary", {k: [v] for k, v in summary.items()},
           dict(total_time=F64, hardware_flops=I64, tensor_engine_instruction_count=I64, dma_transfer_count=I64,
                cc_op_count=I64, mfu_estimated_percent=F64, future_metric=F64))
    meta = dict(profile_schema_version=schema_version, ntff_version=6, num_physical_cores=lnc, vnc_enabled=lnc > 1,
                first_hw_timestamp=T_BASE + skew_ns, last_hw_timestamp=last, first_ts="2025-12-18 15:35:56+00:00",
                last_ts="2025-12-18 15:35:57+00:00", dma_ddr_bandwidth=4e11, num_dma_engines_per_neuroncore=16,
                hbm_ddr_bandwidth=HBM_BPS, tensor_engine_num_rows=ROWS, tensor_engine_num_cols=COLS,
                tensor_engine_clock_freq=CLOCK_GHZ, vector_engine_clock_freq=0.96, vector_engine_num_channels=128,
                scalar_engine_clock_freq=1.4, scalar_engine_num_channels=128, gpsimd_engine_clock_freq=1.2,
                gpsimd_engine_num_channels=128, neuroncore_clock_freq=1.4, ticks_per_nanosec=1,
                instance_type="trn2.48xlarge", neuroncore_idx=rank, neuron_device_idx=0, profile_name="llama-test")
    m_types = {k: (STR if isinstance(v, str) else BOOL if isinstance(v, bool) else F64 if isinstance(v, float) else I64)
               for k, v in meta.items()}
    m_types.update(ntff_version=I32, num_physical_cores=I32, num_dma_engines_per_neuroncore=I32)
    if missing_optional:
        for k in ("instance_type", "neuroncore_idx", "neuron_device_idx", "profile_name"):
            meta.pop(k)
    _write(d, "Metadata", {k: [v] for k, v in meta.items()}, m_types)
    _write(d, "FutureTable", {"anything": [1, 2, 3]}, {"anything": I64})  # a newer minor version's table
    return d


def write_ranks(root: Path, ranks: int = 2, **kwargs) -> Path:
    """`ranks` profile directories rank_0, rank_1, ... under `root` (the layout of a multi-rank capture)."""
    for r in range(ranks):
        write_profile(root / f"rank_{r}", rank=r, ranks=ranks, skew_ns=r * 700, **kwargs)
    return root
