"""The memory view's model: SBUF and PSUM allocations per core over time (`sbuf_allocations`, 1.4).

`load_memory` reads the table once (on the tools' worker) into per-lane arrays, one lane per
(chip, core, memory), sorted by start, with each lane's peak. For a time window the view asks
`raster`: per pixel of partitions or addresses (y) over time (x), the kind holding the most and
how full it is, so the GUI draws one image per lane whatever the number of allocations, and the
window's answer costs the pixels, not the trace. `at` and `describe` answer
hover and click from the same arrays. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from explorer.model import columns
from explorer.model.units import format_bytes, format_ns
from simcore.trace import Trace
from simcore.trace.schema import ALLOCATION_KINDS, ALLOCATION_MEMORIES

TABLE = "sbuf_allocations"
MODES = ("partitions", "address")
"""y axis: the partitions an allocation spans, or its byte address in each partition."""


@dataclass
class Lane:
    """One core's allocations in one memory, sorted by start."""

    chip: int
    core: int
    memory: str
    rows: np.ndarray            # row numbers in MemoryData's columns, by start
    start: np.ndarray
    end: np.ndarray
    longest: int                # longest allocation (ns): a window's candidates start at most this early
    peak_bytes: int
    peak_t: int

    @property
    def label(self) -> str:
        return f"chip {self.chip} core {self.core} {self.memory.upper()}"


@dataclass
class MemoryData:
    """A trace's allocations (empty with `reason` when there is nothing to show)."""

    reason: str | None
    capacity: dict[str, tuple[int, int]] = field(default_factory=dict)  # memory -> (bytes per core, partitions)
    lanes: list[Lane] = field(default_factory=list)
    cols: dict[str, np.ndarray] = field(default_factory=dict)
    tensors: list[str] = field(default_factory=list)
    kernel_names: dict[int, str] = field(default_factory=dict)  # of the kernels that allocate

    def lanes_of(self, memory: str) -> list[Lane]:
        return [lane for lane in self.lanes if lane.memory == memory]

    def y_range(self, memory: str, mode: str) -> int:
        """The y extent of a lane: its partitions, or the bytes of one partition."""
        nbytes, parts = self.capacity[memory]
        return parts if mode == "partitions" else nbytes // parts


@dataclass(frozen=True)
class Overview:
    """One memory's allocations over the whole trace, as the view's status line states them."""

    allocations: int
    cores: int
    busiest: Lane | None  # the lane that held the most at once
    capacity_bytes: int   # one core's

    @property
    def peak_percent(self) -> float:
        """The busiest core's most held at once, as a share of its memory (0 with no allocations)."""
        return 100.0 * self.busiest.peak_bytes / self.capacity_bytes if self.busiest is not None else 0.0


def overview(data: MemoryData, memory: str) -> Overview:
    """How many allocations `memory` has, on how many cores, and the busiest core's peak."""
    lanes = data.lanes_of(memory)
    return Overview(sum(len(lane.rows) for lane in lanes), len(lanes),
                    max(lanes, key=lambda lane: lane.peak_bytes) if lanes else None, data.capacity[memory][0])


def _capacity(hardware: dict) -> dict[str, tuple[int, int]]:
    out = {}
    for mem in ALLOCATION_MEMORIES:
        spec = hardware.get(mem) if isinstance(hardware.get(mem), dict) else {}
        nbytes, parts = spec.get("bytes_per_core"), spec.get("partitions")
        if isinstance(nbytes, int) and isinstance(parts, int) and nbytes > 0 and parts > 0:
            out[mem] = (nbytes, parts)
    return out


def _peak(start: np.ndarray, end: np.ndarray, nbytes: np.ndarray) -> tuple[int, int]:
    """Most bytes held at once and when (ends before starts at the same instant)."""
    if not len(start):
        return 0, 0
    t = np.concatenate([end, start])
    d = np.concatenate([-nbytes, nbytes])
    o = np.lexsort((d, t))
    held = np.cumsum(d[o])
    i = int(np.argmax(held))
    return int(held[i]), int(t[o][i])


def load_memory(trace: Trace) -> MemoryData:
    """Every allocation of `trace`, by lane; `reason` says why there are none."""
    if not trace.has_table(TABLE):
        return MemoryData(f"This trace has no allocation data: it was written in trace format {trace.version}, before "
                          "1.4 added the sbuf_allocations table. Capture it again to see its memory.")
    t = trace.table(TABLE)
    if t.num_rows == 0:
        if "import" in trace.meta or "simulator" not in trace.meta:
            return MemoryData("This trace has no allocation data: it was imported from a profile, and profiles carry "
                              "none.")
        return MemoryData("This trace has no allocation data: it has no instruction-detail cores (capture with "
                          "--cores 0, or --detail instruction, to record them).")
    capacity = _capacity(trace.hardware)
    cols = {name: columns.num(t, name) for name in ("chip", "core", "partition_start", "partitions", "address",
                                                   "bytes", "start_ns", "end_ns", "kernel_id")}
    codes, tensors = columns.codes(t, "tensor")
    cols["tensor"] = codes.astype(np.int64)
    for name, vocab in (("kind", ALLOCATION_KINDS), ("memory", ALLOCATION_MEMORIES)):
        codes, values = columns.codes(t, name)  # (a later minor version's kind or memory reads as -1)
        known = np.array([vocab.index(v) if v in vocab else -1 for v in values] or [-1], np.int64)
        cols[name] = known[codes]
    cols["size"] = -(-cols["bytes"] // np.maximum(cols["partitions"], 1))  # bytes in each partition
    known = (cols["memory"] >= 0) & np.isin(np.array(ALLOCATION_MEMORIES)[np.maximum(cols["memory"], 0)], list(capacity))
    rows_known = np.flatnonzero(known)
    lanes = []
    if len(rows_known):
        uniq, inv = _lane_keys(cols["chip"][known], cols["core"][known], cols["memory"][known])
        for i, (chip, core, mem) in enumerate(uniq):
            rows = rows_known[inv.ravel() == i]
            rows = rows[np.argsort(cols["start_ns"][rows], kind="stable")]
            s, e = cols["start_ns"][rows], cols["end_ns"][rows]
            peak, when = _peak(s, e, cols["bytes"][rows])
            lanes.append(Lane(int(chip), int(core), ALLOCATION_MEMORIES[int(mem)], rows, s, e,
                              int((e - s).max()) if len(rows) else 0, peak, when))
    if not lanes:
        return MemoryData("This trace's allocations name no memory its hardware description sizes (sbuf, psum).")
    return MemoryData(None, capacity, lanes, cols, tensors, _kernel_names(trace, cols["kernel_id"]))


def _lane_keys(chip: np.ndarray, core: np.ndarray, memory: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (chip, core, memory) rows in order, and which one each row is: `np.unique(axis=0)`'s
    answer from one int64 key per row. That call sorts the rows as records, holding the GIL throughout
    (55 ms for the 28M capture's 35,737 allocations, on the tools' worker: the window froze as long);
    an int64 sort releases it and takes ~1 ms."""
    span_core, span_mem = int(core.max()) + 1, int(memory.max()) + 1
    flat = (chip.astype(np.int64) * span_core + core) * span_mem + memory
    uniq, inv = np.unique(flat, return_inverse=True)
    return np.stack([uniq // (span_core * span_mem), uniq // span_mem % span_core, uniq % span_mem], 1), inv


def _kernel_names(trace: Trace, ids: np.ndarray) -> dict[int, str]:
    k = trace.kernels
    kid = columns.num(k, "kernel_id")
    codes, names = columns.codes(k, "name")
    wanted = np.isin(kid, np.unique(ids))
    return {int(i): names[int(c)] for i, c in zip(kid[wanted], codes[wanted])}


def visible(data: MemoryData, lane: Lane, t0: float, t1: float) -> np.ndarray:
    """Row numbers of the lane's allocations overlapping [t0, t1)."""
    lo = int(np.searchsorted(lane.start, t0 - lane.longest, side="left"))
    hi = int(np.searchsorted(lane.start, t1, side="left"))
    sel = np.arange(lo, hi)
    sel = sel[lane.end[sel] > t0]
    return lane.rows[sel]


def y_span(data: MemoryData, rows: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Per row, where it starts and ends on the y axis of `mode`."""
    c = data.cols
    if mode == "partitions":
        return c["partition_start"][rows], c["partition_start"][rows] + c["partitions"][rows]
    return c["address"][rows], c["address"][rows] + c["size"][rows]


@dataclass
class Raster:
    """A lane over a window as pixels: per pixel, the kind holding the most there (0: none, else 1 + its
    index in ALLOCATION_KINDS) and how full it is, 0..1, averaged over the pixel's time."""

    kind: np.ndarray   # (height, width) uint8
    fill: np.ndarray   # (height, width) float32


def raster(data: MemoryData, lane: Lane, t0: float, t1: float, mode: str, width: int, height: int) -> Raster:
    """The lane over [t0, t1) as a `Raster` of `height` x `width`, y growing downwards from partition or
    address 0. Partitions mode: a pixel's fill is the share of its partitions' bytes held (so the few
    partitions of a decode tile show, and a core near its SBUF looks full); address mode: the share of
    the pixel's addresses and time that some allocation holds. Costs the pixels plus one pass over the
    window's allocations, whatever their number."""
    if mode not in MODES:
        raise ValueError(mode)
    width, height = max(int(width), 1), max(int(height), 1)
    rows = visible(data, lane, t0, t1)
    rows = rows[data.cols["kind"][rows] >= 0]
    present = np.unique(data.cols["kind"][rows])  # only the kinds in the window get a layer
    shape = (max(len(present), 1), height + 1, width + 1)
    diff = np.zeros(shape, np.float32)
    if len(rows) and t1 > t0:
        c = data.cols
        sx = width / (t1 - t0)
        xa = np.clip((c["start_ns"][rows] - t0) * sx, 0.0, width)
        xb = np.clip((c["end_ns"][rows] - t0) * sx, 0.0, width)
        xb = np.maximum(xb, np.minimum(xa + 1e-3, width))
        ya, yb = y_span(data, rows, mode)
        sy = height / data.y_range(lane.memory, mode)
        y0 = np.clip(np.floor(ya * sy), 0, height - 1).astype(np.int64)
        y1 = np.maximum(np.clip(np.ceil(yb * sy), 0, height).astype(np.int64), y0 + 1)
        if mode == "partitions":  # the share of each partition's bytes
            w = c["size"][rows] / (data.capacity[lane.memory][0] / data.capacity[lane.memory][1])
        else:  # the share of the pixel's addresses covered (an allocation thinner than a pixel counts its part)
            w = np.minimum((yb - ya) * sy / (y1 - y0), 1.0)
        k = np.searchsorted(present, c["kind"][rows])
        # each allocation's time over the pixel columns: a partial first and last column, whole ones between
        ia, ib = np.floor(xa).astype(np.int64), np.floor(xb).astype(np.int64)
        same = ia == ib
        ib_c = np.minimum(ib, width - 1)
        pieces = [  # (x0, x1, weight)
            (ia, ia + 1, np.where(same, xb - xa, ia + 1 - xa)),
            (ia + 1, np.maximum(ib, ia + 1), np.where(same, 0.0, 1.0)),
            (ib_c, ib_c + 1, np.where(same | (ib >= width), 0.0, xb - ib)),
        ]
        flat, weight = [], []  # a 2-D difference image per kind: four corners per piece, summed in one bincount
        for x0, x1, frac in pieces:
            ww = w * frac
            x0 = np.minimum(x0, width)
            x1 = np.minimum(x1, width)
            for yy, xx, sign in ((y0, x0, 1), (y1, x0, -1), (y0, x1, -1), (y1, x1, 1)):
                flat.append(np.ravel_multi_index((k, yy, xx), shape))
                weight.append(sign * ww)
        diff = np.bincount(np.concatenate(flat), np.concatenate(weight), minlength=diff.size).reshape(shape)
        diff = diff.astype(np.float32)
    occ = diff.cumsum(axis=2).cumsum(axis=1)[:, :height, :width]
    total = occ.sum(axis=0)
    top = present[occ.argmax(axis=0)] + 1 if len(present) else np.zeros((height, width), np.int64)
    kind = np.where(total > 1e-4, top, 0).astype(np.uint8)
    return Raster(kind, np.clip(total, 0.0, 1.0).astype(np.float32))


def at(data: MemoryData, lane: Lane, t: float, y: float, mode: str) -> np.ndarray:
    """Row numbers of the lane's allocations at time `t` and partition or address `y`, those holding the
    most bytes in each partition first."""
    rows = visible(data, lane, t, t + 1e-9)
    if not len(rows):
        return rows
    ya, yb = y_span(data, rows, mode)
    rows = rows[(ya <= y) & (y < yb)]
    return rows[np.argsort(-data.cols["size"][rows], kind="stable")]


def describe_many(data: MemoryData, rows: np.ndarray, kernel_name: str | None = None, origin: float = 0.0,
                  listed: int = 6) -> str:
    """The first of `rows` described, then (when several allocations share the point: different addresses
    of the same partitions) the others, one line each, and what they hold together in each partition."""
    text = describe(data, int(rows[0]), kernel_name, origin)
    if len(rows) == 1:
        return text
    c = data.cols
    held = int(c["size"][rows].sum())
    lines = [f"{data.tensors[int(c['tensor'][r])]} ({ALLOCATION_KINDS[int(c['kind'][r])].replace('_', ' ')}, "
             f"{format_bytes(int(c['size'][r]))} each)" for r in rows[1:listed]]
    more = f"\n  and {len(rows) - listed} more" if len(rows) > listed else ""
    return (f"{text}\n{len(rows)} allocations share this partition here, {format_bytes(held)} of it together; "
            "also:\n  " + "\n  ".join(lines) + more)


def describe(data: MemoryData, row: int, kernel_name: str | None = None, origin: float = 0.0) -> str:
    """What a hover shows: the owner (kernel, tensor, kind), its size, partitions, address and time."""
    c = data.cols
    mem = ALLOCATION_MEMORIES[int(c["memory"][row])].upper()
    p0, n = int(c["partition_start"][row]), int(c["partitions"][row])
    s, e = int(c["start_ns"][row]), int(c["end_ns"][row])
    kernel = f"{kernel_name} (kernel {int(c['kernel_id'][row])})" if kernel_name else f"kernel {int(c['kernel_id'][row])}"
    kind = ALLOCATION_KINDS[int(c["kind"][row])].replace("_", " ") if c["kind"][row] >= 0 else "unknown"
    addr = int(c["address"][row])
    return (f"{data.tensors[int(c['tensor'][row])]} -- {kind}\n{kernel}\n"
            f"{format_bytes(int(c['bytes'][row]))} of {mem}: partitions {p0}-{p0 + n - 1}, "
            f"{format_bytes(int(c['size'][row]))} each at byte {addr:,}\n"
            f"{format_ns(s - origin)} to {format_ns(e - origin)} ({format_ns(e - s)})")


def held_at(data: MemoryData, lane: Lane, t: float) -> tuple[int, int]:
    """(bytes held, most bytes held in one partition) by the lane's allocations at time `t`."""
    rows = visible(data, lane, t, t + 1e-9)
    if not len(rows):
        return 0, 0
    c = data.cols
    parts = data.capacity[lane.memory][1]
    use = np.zeros(parts + 1, np.int64)
    np.add.at(use, np.minimum(c["partition_start"][rows], parts), c["size"][rows])
    np.add.at(use, np.minimum(c["partition_start"][rows] + c["partitions"][rows], parts), -c["size"][rows])
    return int(c["bytes"][rows].sum()), int(np.cumsum(use)[:parts].max())
