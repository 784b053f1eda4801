"""Duration statistics and histograms per opcode, kernel or op (Tracy's find-zone), via DuckDB.

`duration_stats` groups the trace's events by name -- instructions by opcode (and DMA
transfers by direction, named as the timeline names them), kernels by kernel name, ops
by op name -- and gives count, total, mean, p50, p95 and max with the slowest event,
over the whole trace or a window (events that start in it) and optionally some tracks.
`duration_histogram` bins one group's durations in quarter octaves. Both are one SQL
statement over the same read-only views as `trnx query` (`explorer.model.query`), so
they run in parallel inside DuckDB and agree with a query a user writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from explorer.model.query import TraceQuery

GROUPINGS = ("opcode", "kernel", "op")
BINS_PER_OCTAVE = 4

_SOURCES = {
    # grouping -> [(table, name expression, id expression, track column or None)]
    "opcode": [("instructions", "CAST(opcode AS VARCHAR)", "id", "track_id"),
               ("dma", "'DMA ' || CAST(src AS VARCHAR) || '\u2192' || CAST(dst AS VARCHAR)", "id", "track_id")],
    "kernel": [("kernels", "CAST(name AS VARCHAR)", "kernel_id", "track_id")],
    "op": [("ops", "CAST(name AS VARCHAR)", "op_id", None)],
}


@dataclass(frozen=True)
class Window:
    """Which events count: those starting in [t0, t1) (None: unbounded) on `tracks` (None: all)."""

    t0: int | None = None
    t1: int | None = None
    tracks: tuple[int, ...] | None = None

    def where(self, has_track: bool) -> str:
        parts = []
        if self.t0 is not None:
            parts.append(f"start_ns >= {int(self.t0)}")
        if self.t1 is not None:
            parts.append(f"start_ns < {int(self.t1)}")
        if self.tracks is not None and has_track:
            parts.append(f"track_id IN ({', '.join(str(int(t)) for t in self.tracks) or '-1'})")
        return " AND ".join(parts) or "TRUE"


def _events_sql(grouping: str, window: Window, name: str | None = None) -> str:
    if grouping not in GROUPINGS:
        from simcore.errors import UserError

        raise UserError(f"unknown grouping '{grouping}'; choose one of {', '.join(GROUPINGS)}.")
    parts = []
    for table, expr, ident, track in _SOURCES[grouping]:
        where = window.where(track is not None)
        if grouping == "op":
            where += " AND level = 'op'"
        parts.append(f"SELECT '{table}' AS tbl, {expr} AS name, {ident} AS ident, start_ns, dur_ns FROM {table} WHERE {where}")
    sql = " UNION ALL ".join(parts)
    if name is not None:
        sql = f"SELECT * FROM ({sql}) WHERE name = '{name.replace(chr(39), chr(39) * 2)}'"
    return sql


def _quantile_input(q: TraceQuery, grouping: str) -> str:
    """What the quantiles read: the durations as 32-bit integers when every one fits (the same
    values, so the same results), else as they are. Exact quantiles keep every value of a group
    until the end: 4 bytes a value instead of 8 halves that, ~160 MB of the window's peak on a
    12M-event trace."""
    for table, *_ in _SOURCES[grouping]:
        if table not in q.trace.table_names:
            continue
        dur = q.trace.table(table).column("dur_ns")
        if len(dur) and not -2**31 <= pc.min(dur).as_py() <= pc.max(dur).as_py() < 2**31:
            return "dur_ns"
    return "CAST(dur_ns AS INTEGER)"


def duration_stats(q: TraceQuery, grouping: str = "opcode", window: Window = Window()) -> pd.DataFrame:
    """Per name: count, total_ns, mean_ns, p50_ns, p95_ns, max_ns and the slowest event
    (`slowest_table`, `slowest_id`: an instructions/dma id, kernel_id or op_id, and its start),
    sorted by total time."""
    d = _quantile_input(q, grouping) if grouping in GROUPINGS else "dur_ns"
    sql = f"""
        SELECT name, count(*) AS count, sum(dur_ns) AS total_ns, avg(dur_ns) AS mean_ns,
               quantile_cont({d}, 0.5) AS p50_ns, quantile_cont({d}, 0.95) AS p95_ns,
               max(dur_ns) AS max_ns, arg_max(tbl, dur_ns) AS slowest_table,
               arg_max(ident, dur_ns) AS slowest_id, arg_max(start_ns, dur_ns) AS slowest_start_ns
        FROM ({_events_sql(grouping, window)}) GROUP BY name ORDER BY total_ns DESC, name"""
    return q.run(sql).to_pandas()


@dataclass
class Histogram:
    """Counts of durations in log-spaced bins: bin i holds [edges[i], edges[i + 1]) ns."""

    name: str
    edges: np.ndarray  # ns, len(counts) + 1
    counts: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def duration_histogram(q: TraceQuery, grouping: str, name: str, window: Window = Window()) -> Histogram:
    """One name's durations in quarter-octave bins (zero-length events fall in the first bin)."""
    k = BINS_PER_OCTAVE
    sql = f"""
        SELECT CAST(floor(log2(greatest(dur_ns, 1)) * {k}) AS BIGINT) AS b, count(*) AS n
        FROM ({_events_sql(grouping, window, name)}) GROUP BY b ORDER BY b"""
    t = q.run(sql)
    if t.num_rows == 0:
        return Histogram(name, np.array([0.0, 1.0]), np.zeros(1, np.int64))
    b = t.column("b").to_numpy()
    n = t.column("n").to_numpy()
    lo, hi = int(b.min()), int(b.max())
    counts = np.zeros(hi - lo + 1, np.int64)
    counts[b - lo] = n
    edges = 2.0 ** (np.arange(lo, hi + 2) / k)
    if lo == 0:
        edges[0] = 0.0  # the first bin also holds zero-length events
    return Histogram(name, edges, counts)


def duration_query(grouping: str, name: str, lo_ns: float, hi_ns: float, window: Window = Window(),
                   origin_ns: int = 0) -> str:
    """The field search that selects what one name's histogram counts with durations in [lo, hi] ns
    (what a range selected on it selects on the timeline), in `window` (`origin_ns`: the trace's
    start, which the search's times count from). Per op that is the kernels (and collectives)
    of the ops that took that long: an op has no row of its own."""
    value = name if " " not in name else name.replace(" ", "?")
    lo, hi = math.floor(lo_ns), math.ceil(hi_ns)
    if grouping == "op":
        terms = [f"op:{value}", f"opdur>={lo}", f"opdur<={hi}"]
        start = "opstart"
    else:
        kind = "type:kernel" if grouping == "kernel" else "type:dma" if name.startswith("DMA ") else "type:instruction"
        terms = [f"{'kernel' if grouping == 'kernel' else 'name'}:{value}", kind, f"dur>={lo}", f"dur<={hi}"]
        start = "start"
    if window.t0 is not None:
        terms.append(f"{start}>={int(window.t0) - origin_ns}")
    if window.t1 is not None:
        terms.append(f"{start}<{int(window.t1) - origin_ns}")
    if window.tracks is not None and grouping != "op":  # ops have no row: the stats ignore the rows for them
        terms.append(f"track_id:{','.join(str(int(t)) for t in window.tracks) or '-1'}")
    return " ".join(terms)
