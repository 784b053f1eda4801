"""The drill-down tree model -> layer -> op -> kernel -> instruction, with metrics per row.

`Hierarchy(trace)` computes kernel and op rows once (vectorised; instructions are
only touched through per-kernel bincounts) and hands out plain DataFrames with
stable columns, so a Qt tree/table model only displays them:

    node, parent, level, id, name, kind, chip, core, track_id, start_ns, end_ns,
    dur_ns, share_percent, flops, model_flops, hbm_bytes, tflops, gbps,
    arithmetic_intensity, bound, dtype, instruction_count, mfu_percent,
    mfu_bf16_percent, mbu_percent, roofline_percent

`node` keys link rows to the trace: "op:<op_id>", "kernel:<kernel_id>",
"instruction:<id>", "dma:<id>". Instruction rows are produced on demand per kernel
(`children("kernel:7")`); `ancestors(node)` walks back up for "select on the
timeline, select in the tree".
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from explorer.model.analysis.bound import by_kernel_time, classify
from explorer.model.events import DMA, INSTRUCTION, EventIndex
from explorer.model.intervals import mean_concurrency, union_length_per_group
from explorer.model.analysis.peaks import Peaks
from explorer.model.columns import codes, num, strings
from explorer.model.tracks import Tracks
from explorer.model.table_chunks import TrackRuns, batches, take_rows
from simcore.errors import UserError
from simcore.trace.schema import COLLECTIVE_KINDS
from simcore.trace import Trace

LEVELS = ("model", "layer", "op", "kernel", "instruction")
ROW_COLUMNS = (
    "node", "parent", "level", "id", "name", "kind", "chip", "core", "track_id", "start_ns", "end_ns",
    "dur_ns", "share_percent", "flops", "model_flops", "hbm_bytes", "tflops", "gbps",
    "arithmetic_intensity", "bound", "dtype", "instruction_count",
    "mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent",
)
RATE_COLUMNS = ("mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent")
# what each metric column of the operator table means (docs/metrics.md, "Operator tree"):
# the tree view's header tooltips, so the GUI explains a number the same way the docs do
COLUMN_DOCS: dict[str, str] = {
    "name": "Model, layer, op (ops table), kernel (kernels table) or instruction / DMA transfer.",
    "level": "model, layer, op, kernel or instruction (DMA transfers are instruction-level rows).",
    "dur_ns": "Wall time of the row: end of its last kernel minus its start (an event's own duration).",
    "share_percent": "dur_ns / the trace's span. Kernels on different cores overlap, so siblings may sum past 100.",
    "flops": "Hardware FLOPs: a kernel's own; an op's is the sum over every kernel in its subtree.",
    "model_flops": "FLOPs the model needs (excludes recompute, transposes, padding), summed like flops.",
    "hbm_bytes": "HBM read + write bytes, summed like flops (an instruction row: its SBUF/PSUM bytes).",
    "tflops": "flops / dur_ns / 1e3: achieved TFLOPS over the row's wall time.",
    "gbps": "hbm_bytes / dur_ns (bytes per ns = GB/s).",
    "arithmetic_intensity": "flops / hbm_bytes in FLOP per byte (empty when there are no HBM bytes).",
    "bound": "What limits the row: compute, hbm, dma_latency, collective or unknown (explorer.model.analysis.bound).",
    "dtype": "Compute data type of a kernel's matmuls, or an instruction's operand type.",
    "chip": "Chip index (-1 for ops, which may span chips).",
    "core": "NeuronCore index (-1 for ops).",
    "start_ns": "Start, from the trace's start.",
    "instruction_count": "Instructions under the row (0 without instruction detail).",
    "mfu_percent": "Model FLOPs / (the per-core peak of each kernel's own dtype x the row's cores x dur_ns): "
                   "MFU against the dtype's peak (an MXFP8 kernel against the MXFP8 peak).",
    "mfu_bf16_percent": "Model FLOPs normalised to BF16 (tensor.bf16_flop_weight) / (the BF16 peak x cores x dur_ns): "
                        "the Neuron profiler's MFU, which an MXFP8 or FP8 run reads low on.",
    "mbu_percent": "HBM bytes / (the row's share of HBM bandwidth x dur_ns): a kernel's share is its chip's bandwidth "
                   "over the chip's cores running kernels beside it; an op's, its chips' bandwidth.",
    "roofline_percent": "Achieved / attainable at the row's intensity, with HBM at the row's share: "
                        "max(FLOPs at the dtype's peak, HBM bytes at the share) / dur_ns.",
}
# instruction track kinds counted separately for a kernel's busiest-engine time
_ENGINE_ROWS = ("tensor", "tensor_matrix", "vector", "scalar", "gpsimd", "sync")
_SYNC = _ENGINE_ROWS.index("sync")  # the compute engines come before it


def rows_where(table: pa.Table, column: str, value: int) -> np.ndarray:
    """Row numbers where `column == value`, computed by Arrow on the chunks as they are (a
    numpy view of a many-chunk column would copy the whole column first)."""
    if not table.num_rows:
        return np.zeros(0, np.int64)
    return pc.indices_nonzero(pc.equal(table.column(column), value)).to_numpy().astype(np.int64, copy=False)


class _KernelIndex:
    """Row index into `ids` (the kernels table's ids) of each event's kernel, -1 when it has none."""

    def __init__(self, ids: np.ndarray) -> None:
        self.order = np.argsort(ids, kind="stable")
        self.sorted = ids[self.order]

    def __call__(self, kernel_of_row: np.ndarray) -> np.ndarray:
        if len(self.sorted) == 0 or len(kernel_of_row) == 0:
            return np.full(len(kernel_of_row), -1, np.int64)
        # events come in long runs of one kernel: each run is looked up once
        first = np.r_[0, np.flatnonzero(kernel_of_row[1:] != kernel_of_row[:-1]) + 1]
        head = kernel_of_row[first]
        pos = np.minimum(np.searchsorted(self.sorted, head), len(self.sorted) - 1)
        found = np.where(self.sorted[pos] == head, self.order[pos], -1)
        return found if len(first) == len(kernel_of_row) else np.repeat(found, np.diff(np.r_[first, len(kernel_of_row)]))


def _rate(num_: np.ndarray, dur_ns: np.ndarray, scale: float) -> np.ndarray:
    dur = np.asarray(dur_ns, dtype=np.float64)
    return np.divide(np.asarray(num_, dtype=np.float64), dur * scale, out=np.full(len(dur), np.nan), where=dur > 0)


def _rates(df: pd.DataFrame) -> None:
    """MFU (both ways), MBU and roofline % of rows with `t_model_ns`, `t_model_bf16_ns`,
    `t_compute_ns` and `t_hbm_ns` (per-core times at the roofs): each is that time over the
    row's wall time, so a row at 100% runs at the roof (docs/metrics.md, "Operator tree")."""
    dur = df["dur_ns"].to_numpy(np.float64)
    ok = dur > 0

    def pct(t: np.ndarray) -> np.ndarray:
        return np.divide(100.0 * np.asarray(t, np.float64), dur, out=np.full(len(dur), np.nan), where=ok)

    df["mfu_percent"] = pct(df["t_model_ns"])
    df["mfu_bf16_percent"] = pct(df["t_model_bf16_ns"])
    df["mbu_percent"] = pct(df["t_hbm_ns"])
    df["roofline_percent"] = pct(np.fmax(df["t_compute_ns"].to_numpy(np.float64), df["t_hbm_ns"].to_numpy(np.float64)))


FILTER_COLUMNS = ("name", "kind", "bound", "dtype", "level")


def filter_closure(rows: pd.DataFrame, text: str, columns: tuple[str, ...] = FILTER_COLUMNS) -> tuple[set[str], list[str]]:
    """The operator tree filtered by `text` (case-insensitive substring of any of `columns`):
    (every node to show: the matches, their ancestors and everything under them; the matches).

    `rows` is `Hierarchy.rows()` (node and parent keys); the closure takes as many vectorised
    steps as the tree is deep, never a loop over rows.
    """
    text = text.strip().lower()
    match = np.zeros(len(rows), bool)
    for col in columns:
        match |= rows[col].astype(str).str.lower().str.contains(text, regex=False).to_numpy()
    parent = pd.Index(rows["node"]).get_indexer(rows["parent"])
    has_parent = parent >= 0
    up = match.copy()
    while True:  # ancestors of matches
        nxt = up.copy()
        nxt[parent[up & has_parent]] = True
        if (nxt == up).all():
            break
        up = nxt
    down = match.copy()
    while True:  # everything under a match
        nxt = down | (has_parent & down[np.maximum(parent, 0)])
        if (nxt == down).all():
            break
        down = nxt
    nodes = rows["node"].to_numpy()
    return set(nodes[up | down].tolist()), nodes[match].tolist()


class Hierarchy:
    """Metrics for every op and kernel of a trace, and the tree that links them."""

    def __init__(self, trace: Trace, tracks: Tracks | None = None, peaks: Peaks | None = None,
                 events: EventIndex | None = None) -> None:
        self.trace = trace
        self.tracks = tracks or Tracks.of(trace)
        self.peaks = peaks or Peaks.from_meta(trace.hardware)
        self.total_ns = max(trace.duration_ns, 1)
        if events is not None:  # e.g. the timeline's (`TraceIndex.events`): one id index per trace
            self.__dict__["events"] = events

    # -- kernels -------------------------------------------------------------------
    @cached_property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel: time, FLOPs, bytes, rates, roofline times, detail, bound."""
        k = self.trace.kernels
        ids = num(k, "kernel_id").astype(np.int64)
        df = pd.DataFrame({
            "kernel_id": ids,
            "op_id": num(k, "op_id").astype(np.int64),
            "chip": num(k, "chip"),
            "core": num(k, "core"),
            "track_id": num(k, "track_id"),
            "name": strings(k, "name"),
            "dtype": strings(k, "dtype"),
            "start_ns": num(k, "start_ns"),
            "dur_ns": num(k, "dur_ns"),
            "flops": num(k, "flops"),
            "model_flops": num(k, "model_flops"),
            "hbm_read_bytes": num(k, "hbm_read_bytes"),
            "hbm_write_bytes": num(k, "hbm_write_bytes"),
        })
        df["end_ns"] = df["start_ns"] + df["dur_ns"]
        df["hbm_bytes"] = df["hbm_read_bytes"] + df["hbm_write_bytes"]
        df["tflops"] = _rate(df["flops"], df["dur_ns"], 1e3)  # FLOP/ns / 1e3 = TFLOPS
        df["gbps"] = _rate(df["hbm_bytes"], df["dur_ns"], 1.0)  # bytes/ns = GB/s
        df["arithmetic_intensity"] = np.divide(
            df["flops"].to_numpy(np.float64), df["hbm_bytes"].to_numpy(np.float64),
            out=np.full(len(df), np.nan), where=df["hbm_bytes"].to_numpy() > 0,
        )
        dtypes = df["dtype"].to_numpy(dtype=object)
        vocab = pd.unique(dtypes)
        peak_of = {d: self.peaks.peak_tflops_for(d) or np.nan for d in vocab}
        weight_of = {d: self.peaks.weight(d) or np.nan for d in vocab}
        peak = np.array([peak_of[d] for d in dtypes], dtype=np.float64)
        df["t_compute_ns"] = df["flops"] / (peak * 1e3)
        # model FLOPs at the dtype's own peak, and normalised to BF16 at the BF16 peak (MFU both ways)
        df["t_model_ns"] = df["model_flops"] / (peak * 1e3)
        bf16 = self.peaks.bf16_flops_per_s_per_core
        weight = np.array([weight_of[d] for d in dtypes], dtype=np.float64)
        df["t_model_bf16_ns"] = df["model_flops"] * weight / (bf16 / 1e9) if bf16 else np.nan
        bw = self.peaks.hbm_bytes_per_s
        # HBM is shared by a chip's cores: a kernel's fair share is the chip's bandwidth over
        # the mean number of the chip's cores running kernels while it runs
        df["hbm_sharing"] = mean_concurrency(df["chip"].to_numpy(), df["start_ns"].to_numpy(), df["end_ns"].to_numpy())
        df["hbm_share_gbps"] = bw / 1e9 / np.maximum(df["hbm_sharing"], 1.0) if bw else np.nan
        df["t_hbm_ns"] = df["hbm_bytes"] * df["hbm_sharing"] / (bw / 1e9) if bw else np.nan
        busy, count, dma_busy, dma_count = self._kernel_detail(ids)
        df["instruction_count"] = count
        df["dma_count"] = dma_count
        detail = (count + dma_count) > 0
        df["engine_busy_ns"] = np.where(detail, busy, np.nan)
        df["dma_busy_ns"] = np.where(detail, dma_busy, np.nan)
        op_kind = self._op_kind_of(df["op_id"].to_numpy())
        df["bound"] = classify(df["dur_ns"], df["t_compute_ns"], df["t_hbm_ns"], df["engine_busy_ns"],
                               df["dma_busy_ns"], np.isin(op_kind, COLLECTIVE_KINDS))
        df["share_percent"] = 100.0 * df["dur_ns"] / self.total_ns
        _rates(df)
        return df

    def _kernel_detail(self, ids: np.ndarray) -> tuple[np.ndarray, ...]:
        n = len(ids)
        kernel_index = _KernelIndex(ids)
        ins = self.trace.instructions
        busy = np.zeros(n)
        sync_busy = np.zeros(n)
        count = np.zeros(n, np.int64)
        if ins.num_rows and n:
            TrackRuns.of(ins, self.tracks, "instructions")  # checks every track id
            kind_idx = np.full(len(self.tracks), -1, np.int64)
            for i, kind in enumerate(_ENGINE_ROWS):
                kind_idx[self.tracks.kind == kind] = i
            per = np.zeros(n * len(_ENGINE_ROWS))
            counted = np.zeros(n)
            # batch by batch (no whole-column copies); rows come in long runs of one kernel on
            # one track: resolve each run once (a run cut by a batch edge is two: same sums)
            for _, c, _ in batches(ins, ("kernel_id", "track_id", "dur_ns")):
                kid, tid = c["kernel_id"], c["track_id"]
                first = np.r_[0, np.flatnonzero((kid[1:] != kid[:-1]) | (tid[1:] != tid[:-1])) + 1]
                run_len = np.diff(np.r_[first, len(kid)])
                run_dur = np.add.reduceat(c["dur_ns"], first).astype(np.float64)
                kidx = kernel_index(kid[first])
                row_kind = kind_idx[tid[first]]
                ok = (kidx >= 0) & (row_kind >= 0)
                per += np.bincount(kidx[ok] * len(_ENGINE_ROWS) + row_kind[ok], weights=run_dur[ok],
                                   minlength=n * len(_ENGINE_ROWS))
                has = kidx >= 0
                counted += np.bincount(kidx[has], weights=run_len[has], minlength=n)
            per_engine = per.reshape(n, len(_ENGINE_ROWS))
            busy = per_engine[:, :_SYNC].max(axis=1)  # the busiest compute engine
            sync_busy = per_engine[:, _SYNC]
            count = np.rint(counted).astype(np.int64)
        dma = self.trace.dma
        dma_busy = np.zeros(n)
        dma_count = np.zeros(n, np.int64)
        if dma.num_rows and n:
            kidx = kernel_index(num(dma, "kernel_id"))
            ok = kidx >= 0
            s = num(dma, "start_ns")[ok]
            dma_busy = union_length_per_group(kidx[ok], s, s + num(dma, "dur_ns")[ok], n).astype(np.float64)
            dma_count = np.bincount(kidx[ok], minlength=n)
        # the DMA side of a kernel: its queues' busy time, or the Sync engine's time issuing their
        # descriptors (DmaTrigger) when that is longer -- issue cost limits small transfers too
        return busy, count, np.maximum(dma_busy, sync_busy), dma_count

    # -- ops -----------------------------------------------------------------------
    @cached_property
    def _ops_raw(self) -> pd.DataFrame:
        o = self.trace.ops
        return pd.DataFrame({
            "op_id": num(o, "op_id").astype(np.int64),
            "parent_id": num(o, "parent_id").astype(np.int64),
            "level": strings(o, "level"),
            "name": strings(o, "name"),
            "kind": strings(o, "kind"),
            "start_ns": num(o, "start_ns"),
            "dur_ns": num(o, "dur_ns"),
        })

    def _op_kind_of(self, op_ids: np.ndarray) -> np.ndarray:
        raw = self._ops_raw
        kind = dict(zip(raw["op_id"].tolist(), raw["kind"].tolist()))
        return np.array([kind.get(int(i), "") for i in op_ids], dtype=object) if len(op_ids) < 50_000 else (
            pd.Series(op_ids).map(kind).fillna("").to_numpy(dtype=object)
        )

    @cached_property
    def _ancestry(self) -> tuple[np.ndarray, np.ndarray]:
        """(parent row per op row, depth per op row); a cycle raises UserError."""
        raw = self._ops_raw
        ids = raw["op_id"].to_numpy()
        pos = pd.Index(ids)
        if not pos.is_unique:
            raise UserError("the trace's ops table repeats an op_id; each op needs a unique id.")
        parent = pos.get_indexer(raw["parent_id"].to_numpy())
        depth = np.zeros(len(ids), np.int64)
        cur = parent.copy()
        for _ in range(256):
            live = cur >= 0
            if not live.any():
                return parent, depth
            depth[live] += 1
            cur = np.where(live, parent[np.maximum(cur, 0)], -1)
        raise UserError("the trace's ops table has a parent_id cycle; the op hierarchy must be a tree.")

    def _pairs(self, op_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(item index, ancestor op row) for each item's op and every op above it."""
        parent, _ = self._ancestry
        items, anc = [], []
        cur = op_rows.copy()
        idx = np.arange(len(op_rows))
        while True:
            live = cur >= 0
            if not live.any():
                break
            items.append(idx[live])
            anc.append(cur[live])
            cur = np.where(live, parent[np.maximum(cur, 0)], -1)
        if not items:
            return np.array([], np.int64), np.array([], np.int64)
        return np.concatenate(items), np.concatenate(anc)

    @cached_property
    def ops(self) -> pd.DataFrame:
        """One row per op (model, layer, op): kernel totals over its subtree, rates, bound."""
        raw = self._ops_raw.copy()
        n = len(raw)
        parent, depth = self._ancestry
        raw["depth"] = depth
        raw["end_ns"] = raw["start_ns"] + raw["dur_ns"]
        k = self.kernels
        k_op = pd.Index(raw["op_id"]).get_indexer(k["op_id"].to_numpy()) if n else np.full(len(k), -1)
        item, anc = self._pairs(k_op)
        sums = {}
        for col in ("flops", "model_flops", "hbm_read_bytes", "hbm_write_bytes", "dur_ns", "instruction_count"):
            sums[col] = np.bincount(anc, weights=k[col].to_numpy(np.float64)[item], minlength=n)
        for col in ("t_compute_ns", "t_model_ns", "t_model_bf16_ns"):
            v = k[col].to_numpy(np.float64)[item]
            sums[col] = np.bincount(anc, weights=np.nan_to_num(v), minlength=n)
            sums[col + "_known"] = np.bincount(anc, weights=(~np.isnan(v)).astype(float), minlength=n)
        unit = k["chip"].to_numpy(np.int64)[item] * 4096 + k["core"].to_numpy(np.int64)[item]
        pairs = pd.DataFrame({"anc": anc, "unit": unit, "chip": k["chip"].to_numpy()[item]})
        cores = pairs.drop_duplicates(["anc", "unit"]).groupby("anc").size().reindex(range(n), fill_value=0).to_numpy()
        chips = pairs.drop_duplicates(["anc", "chip"]).groupby("anc").size().reindex(range(n), fill_value=0).to_numpy()
        kcount = np.bincount(anc, minlength=n)
        raw["kernel_count"] = kcount
        raw["cores"] = cores
        raw["chips"] = chips
        raw["flops"] = sums["flops"].astype(np.int64)
        raw["model_flops"] = sums["model_flops"].astype(np.int64)
        raw["hbm_read_bytes"] = sums["hbm_read_bytes"].astype(np.int64)
        raw["hbm_write_bytes"] = sums["hbm_write_bytes"].astype(np.int64)
        raw["hbm_bytes"] = raw["hbm_read_bytes"] + raw["hbm_write_bytes"]
        raw["kernel_time_ns"] = sums["dur_ns"].astype(np.int64)
        raw["instruction_count"] = sums["instruction_count"].astype(np.int64)
        raw["tflops"] = _rate(raw["flops"], raw["dur_ns"], 1e3)
        raw["gbps"] = _rate(raw["hbm_bytes"], raw["dur_ns"], 1.0)
        raw["arithmetic_intensity"] = np.divide(
            raw["flops"].to_numpy(np.float64), raw["hbm_bytes"].to_numpy(np.float64),
            out=np.full(n, np.nan), where=raw["hbm_bytes"].to_numpy() > 0,
        )
        ncores = np.maximum(cores, 1).astype(np.float64)
        all_known = sums["t_compute_ns_known"] == kcount
        raw["t_compute_ns"] = np.where(all_known & (kcount > 0), sums["t_compute_ns"] / ncores, np.nan)
        for col in ("t_model_ns", "t_model_bf16_ns"):
            known = sums[col + "_known"] == kcount
            raw[col] = np.where(known & (kcount > 0), sums[col] / ncores, np.nan)
        bw = self.peaks.hbm_bytes_per_s
        raw["t_hbm_ns"] = raw["hbm_bytes"] / (bw / 1e9) / np.maximum(chips, 1) if bw else np.nan
        raw.loc[kcount == 0, "t_hbm_ns"] = np.nan
        is_cc = np.isin(raw["kind"].to_numpy(), COLLECTIVE_KINDS)
        # what its kernels say, not the rule on its cross-rank span (a straggler dilutes that)
        bound = by_kernel_time(k["bound"].to_numpy(dtype=object), k["dur_ns"].to_numpy(np.float64), item, anc, n)
        bound[is_cc] = "collective"
        raw["bound"] = bound
        raw["share_percent"] = 100.0 * raw["dur_ns"] / self.total_ns
        raw["parent_row"] = parent
        _rates(raw)
        return raw

    # -- the tree ------------------------------------------------------------------
    def rows(self, levels: tuple[str, ...] = ("model", "layer", "op", "kernel")) -> pd.DataFrame:
        """The operator table: op and kernel rows with `ROW_COLUMNS`, parents before children (cached)."""
        key = tuple(levels)
        if key not in self._rows_cache:
            self._rows_cache[key] = self._build_rows(key)
        return self._rows_cache[key]

    @cached_property
    def _rows_cache(self) -> dict[tuple[str, ...], pd.DataFrame]:
        return {}

    @cached_property
    def _children_index(self) -> dict[str, np.ndarray]:
        """Row positions in `rows()` per parent node, so expanding a tree node is a lookup."""
        parents = self.rows()["parent"]
        return {p: idx.to_numpy() for p, idx in parents.groupby(parents, sort=False).groups.items()} if len(parents) else {}

    def _build_rows(self, levels: tuple[str, ...]) -> pd.DataFrame:
        parts = []
        if any(lv in levels for lv in ("model", "layer", "op")):
            o = self.ops
            o = o[o["level"].isin(levels)]
            parent_ids = self._ops_raw["op_id"].to_numpy()
            pr = o["parent_row"].to_numpy()
            parts.append(pd.DataFrame({
                "node": "op:" + o["op_id"].astype(str),
                "parent": np.where(pr >= 0, "op:" + pd.Series(parent_ids[np.maximum(pr, 0)]).astype(str).to_numpy(), ""),
                "level": o["level"], "id": o["op_id"], "name": o["name"], "kind": o["kind"],
                "chip": -1, "core": -1, "track_id": -1,
                "start_ns": o["start_ns"], "end_ns": o["end_ns"], "dur_ns": o["dur_ns"],
                "share_percent": o["share_percent"], "flops": o["flops"], "model_flops": o["model_flops"],
                "hbm_bytes": o["hbm_bytes"], "tflops": o["tflops"], "gbps": o["gbps"],
                "arithmetic_intensity": o["arithmetic_intensity"], "bound": o["bound"], "dtype": "",
                "instruction_count": o["instruction_count"],
                **{c: o[c] for c in RATE_COLUMNS},
                "_order": o["depth"],
            }))
        if "kernel" in levels:
            k = self.kernels
            known = set(self._ops_raw["op_id"].tolist())
            has_op = k["op_id"].isin(known).to_numpy()
            parts.append(pd.DataFrame({
                "node": "kernel:" + k["kernel_id"].astype(str),
                "parent": np.where(has_op, "op:" + k["op_id"].astype(str), ""),
                "level": "kernel", "id": k["kernel_id"], "name": k["name"], "kind": "kernel",
                "chip": k["chip"], "core": k["core"], "track_id": k["track_id"],
                "start_ns": k["start_ns"], "end_ns": k["end_ns"], "dur_ns": k["dur_ns"],
                "share_percent": k["share_percent"], "flops": k["flops"], "model_flops": k["model_flops"],
                "hbm_bytes": k["hbm_bytes"], "tflops": k["tflops"], "gbps": k["gbps"],
                "arithmetic_intensity": k["arithmetic_intensity"], "bound": k["bound"], "dtype": k["dtype"],
                "instruction_count": k["instruction_count"],
                **{c: k[c] for c in RATE_COLUMNS},
                "_order": 1000,
            }))
        if not parts:
            return pd.DataFrame(columns=list(ROW_COLUMNS))
        out = pd.concat(parts, ignore_index=True)
        out = out.sort_values(["_order", "start_ns"], kind="stable").drop(columns="_order")
        return out.reset_index(drop=True)[list(ROW_COLUMNS)]

    def children(self, node: str) -> pd.DataFrame:
        """The rows directly under `node` ("" for the top level); kernels expand to their events."""
        level, ident = self._parse(node)
        if level == "kernel":
            return self.events_of_kernel(ident)
        if level in ("instruction", "dma"):
            return pd.DataFrame(columns=list(ROW_COLUMNS))
        idx = self._children_index.get(node)
        if idx is None:
            if level == "op" and not (self._ops_raw["op_id"] == ident).any():
                self._unknown(node)
            return pd.DataFrame(columns=list(ROW_COLUMNS))
        return self.rows().iloc[np.sort(idx)].reset_index(drop=True)

    def events_of_kernel(self, kernel_id: int) -> pd.DataFrame:
        """Instruction and DMA rows of one kernel, in time order, with `ROW_COLUMNS`."""
        k = self.kernels
        hit = k[k["kernel_id"] == kernel_id]
        if hit.empty:
            raise UserError(f"kernel {kernel_id} is not in this trace.")
        parts = []
        for code, full in ((INSTRUCTION, self.trace.instructions), (DMA, self.trace.dma)):
            rows = rows_where(full, "kernel_id", kernel_id)
            if not len(rows):
                continue
            table = take_rows(full, rows)  # only this kernel's rows, chunk by chunk: no whole-column copies
            start = num(table, "start_ns")
            dur = num(table, "dur_ns")
            tid = num(table, "track_id")
            if code == INSTRUCTION:
                c, vocab = codes(table, "opcode")
                name = np.asarray(vocab, dtype=object)[c]
                dc, dvocab = codes(table, "dtype")
                dtype = np.asarray(dvocab, dtype=object)[dc]
                flops = num(table, "flops")
                prefix = "instruction:"
            else:
                sc, sv = codes(table, "src")
                tc, tv = codes(table, "dst")
                name = "DMA " + np.asarray(sv, dtype=object)[sc] + "->" + np.asarray(tv, dtype=object)[tc]
                dtype = ""
                flops = np.zeros(len(rows), np.int64)
                prefix = "dma:"
            nbytes = num(table, "bytes")
            ids = num(table, "id")
            parts.append(pd.DataFrame({
                "node": prefix + pd.Series(ids).astype(str),
                "parent": f"kernel:{kernel_id}", "level": "instruction", "id": ids,
                "name": name, "kind": self.tracks.kind[tid], "chip": self.tracks.chip[tid],
                "core": self.tracks.core[tid], "track_id": tid, "start_ns": start, "end_ns": start + dur,
                "dur_ns": dur, "share_percent": 100.0 * dur / self.total_ns, "flops": flops, "model_flops": 0,
                "hbm_bytes": nbytes, "tflops": _rate(flops, dur, 1e3), "gbps": _rate(nbytes, dur, 1.0),
                "arithmetic_intensity": np.nan, "bound": "", "dtype": dtype, "instruction_count": 1,
                **{c: np.nan for c in RATE_COLUMNS},
            }))
        if not parts:
            return pd.DataFrame(columns=list(ROW_COLUMNS))
        return pd.concat(parts, ignore_index=True).sort_values(["start_ns", "id"], kind="stable").reset_index(drop=True)

    @cached_property
    def events(self) -> EventIndex:
        return EventIndex(self.trace)

    def ancestors(self, node: str) -> list[str]:
        """Nodes from the root down to `node` (inclusive): the path to expand in a tree view."""
        level, ident = self._parse(node)
        path = [node]
        if level in ("instruction", "dma"):
            kid = self.events.event(ident).kernel_id
            if kid < 0:
                return path
            path.insert(0, f"kernel:{kid}")
            level, ident = "kernel", kid
        if level == "kernel":
            k = self.kernels
            hit = k.loc[k["kernel_id"] == ident, "op_id"]
            if hit.empty:
                raise UserError(f"kernel {ident} is not in this trace.")
            ident = int(hit.iloc[0])
            if ident < 0:
                return path
            path.insert(0, f"op:{ident}")
        raw = self._ops_raw
        pos = pd.Index(raw["op_id"])
        row = pos.get_indexer([ident])[0]
        if row < 0:
            return path if level != "op" else self._unknown(node)
        parent, _ = self._ancestry
        row = parent[row]
        while row >= 0:
            path.insert(0, f"op:{int(raw['op_id'].iloc[row])}")
            row = parent[row]
        return path

    def time_range(self, node: str) -> tuple[int, int]:
        """[start, end) of a node, for "zoom the timeline to it"."""
        level, ident = self._parse(node)
        if level in ("instruction", "dma"):
            e = self.events.event(ident)
            return e.start_ns, e.end_ns
        frame, col = (self.kernels, "kernel_id") if level == "kernel" else (self.ops, "op_id")
        hit = frame[frame[col] == ident]
        if hit.empty:
            self._unknown(node)
        return int(hit["start_ns"].iloc[0]), int(hit["end_ns"].iloc[0])

    def track_ids(self, node: str) -> list[int]:
        """Timeline rows that show a node: its event's track, its kernel tracks."""
        level, ident = self._parse(node)
        if level in ("instruction", "dma"):
            return [self.events.event(ident).track_id]
        k = self.kernels
        if level == "kernel":
            return sorted(set(k.loc[k["kernel_id"] == ident, "track_id"].tolist()))
        item, anc = self._pairs(pd.Index(self._ops_raw["op_id"]).get_indexer(k["op_id"].to_numpy()))
        row = pd.Index(self._ops_raw["op_id"]).get_indexer([ident])[0]
        if row < 0:
            self._unknown(node)
        return sorted(set(k["track_id"].to_numpy()[item[anc == row]].tolist()))

    def area_track_ids(self, node: str) -> list[int]:
        """Every timeline row with work under a node: for an op, each core its kernels ran on
        with all that core's rows (kernels, engines, DMA queues, runtime) and, for a collective,
        its chips' collective rows; otherwise `track_ids(node)`. What "select everything under
        this layer" area-selects, so the selection's instructions and bytes are the layer's."""
        level, ident = self._parse(node)
        if level != "op":
            return self.track_ids(node)
        k = self.kernels
        ops = pd.Index(self._ops_raw["op_id"])
        row = ops.get_indexer([ident])[0]
        if row < 0:
            self._unknown(node)
        item, anc = self._pairs(ops.get_indexer(k["op_id"].to_numpy()))
        mine = item[anc == row]
        t = self.tracks
        units = set(zip(k["chip"].to_numpy()[mine].tolist(), k["core"].to_numpy()[mine].tolist()))
        unit_of_track = zip(t.chip.tolist(), t.core.tolist())
        keep = np.array([u in units for u in unit_of_track], dtype=bool) & (t.kind != "counter")
        cc = self.trace.collectives
        if cc.num_rows:  # collective rows of this op and the ops under it
            sub = set(self._ops_raw["op_id"].to_numpy()[self._subtree_rows(row)].tolist())
            hit = np.isin(num(cc, "op_id"), list(sub))
            keep[np.unique(num(cc, "track_id")[hit]).astype(np.int64)] = True
        return np.flatnonzero(keep).tolist()

    def _subtree_rows(self, row: int) -> np.ndarray:
        parent, _ = self._ancestry
        rows = np.arange(len(parent))
        item, anc = self._pairs(rows)
        return rows[item[anc == row]]

    @staticmethod
    def _parse(node: str) -> tuple[str, int]:
        if node == "":
            return "", -1
        level, _, ident = node.partition(":")
        if level not in ("op", "kernel", "instruction", "dma") or not ident.lstrip("-").isdigit():
            raise UserError(f"'{node}' is not a tree node (expected op:ID, kernel:ID, instruction:ID or dma:ID).")
        return level, int(ident)

    @staticmethod
    def _unknown(node: str) -> list[str]:
        raise UserError(f"{node} is not in this trace.")
