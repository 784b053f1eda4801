"""SQL over a trace: DuckDB with each table a read-only view by its name.

`trnx query`, the GUI's query console and notebooks share `TraceQuery`. Each view
is DuckDB's scan of the reader's memory-mapped Arrow table (a partitioned table is
its partitions concatenated, zero-copy), so a query reads the trace's files in place
and the same SQL runs on one-file and per-chip layouts. The connection is in memory
with file access off and its configuration locked, and only SELECT-like statements
are accepted: a query cannot change the trace, write a file or read another one.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from simcore.errors import UserError
from simcore.trace import Trace, open_trace
from simcore.trace.schema import TABLES

START_COLUMNS = ("start_ns", "time_ns", "arrive_ns", "start", "ts")
DURATION_COLUMNS = ("dur_ns", "duration_ns", "dur", "duration")
END_COLUMNS = ("end_ns", "end")


def _duckdb():
    try:
        import duckdb
    except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
        raise UserError("trnx query needs DuckDB; install it with `pip install duckdb`.") from None
    return duckdb


def _sentence(exc: Exception) -> str:
    """DuckDB's message as one line: its first line, without the trailing caret lines."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"\s+", " ", text).rstrip(".!")
    return text


@dataclass(frozen=True)
class Intervals:
    """Where a result's intervals are: its start column and a duration or end column."""

    start: str
    duration: str | None = None
    end: str | None = None
    label: str | None = None

    def arrays(self, table: pa.Table):
        """(start, end) as float64 numpy arrays, rows with a null in either dropped."""
        import numpy as np

        s = pc.cast(table.column(self.start), pa.float64())
        e = pc.cast(table.column(self.end), pa.float64()) if self.end else pc.add(s, pc.cast(table.column(self.duration), pa.float64()))
        s = s.to_numpy(zero_copy_only=False)
        e = e.to_numpy(zero_copy_only=False)
        ok = ~(np.isnan(s) | np.isnan(e))
        return s[ok], e[ok]


def intervals_of(table: pa.Table) -> Intervals | None:
    """A result's interval columns, if it has a numeric start and a duration (or end) column.

    The names are the trace's own (`start_ns` + `dur_ns`, `arrive_ns` + `end_ns`) or
    the common short ones; a `name`, `opcode` or `kind` column labels the intervals.
    """
    names = {n.lower(): n for n in table.column_names}

    def numeric(n: str) -> bool:
        t = table.schema.field(n).type
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)

    start = next((names[c] for c in START_COLUMNS if c in names and numeric(names[c])), None)
    if start is None:
        return None
    dur = next((names[c] for c in DURATION_COLUMNS if c in names and numeric(names[c])), None)
    end = None if dur else next((names[c] for c in END_COLUMNS if c in names and numeric(names[c])), None)
    if dur is None and end is None:
        return None
    label = next((names[c] for c in ("name", "opcode", "kind", "label") if c in names), None)
    return Intervals(start, dur, end, label)


def plain(table: pa.Table) -> pa.Table:
    """The result with DuckDB's wide types narrowed for pandas, JSON and Parquet readers:
    integer-valued decimals (`SUM` of BIGINT is HUGEINT) become int64 when they fit, other
    decimals float64."""
    cols, fields = [], []
    for field, col in zip(table.schema, table.columns):
        if pa.types.is_decimal(field.type):
            target = pa.int64() if field.type.scale == 0 else pa.float64()
            try:
                col = pc.cast(col, target)
            except pa.ArrowInvalid:
                col = pc.cast(col, pa.float64(), safe=False)
            field = pa.field(field.name, target)
        cols.append(col)
        fields.append(field)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


class TraceQuery:
    """A read-only DuckDB connection whose views are a trace's tables.

    One query at a time per object (DuckDB connections are not shared across
    threads here); `interrupt()` may be called from any thread to stop the running one.
    """

    ALLOWED = ("SELECT", "EXPLAIN")

    def __init__(self, trace: Trace | str) -> None:
        duckdb = _duckdb()
        self.trace = trace if isinstance(trace, Trace) else open_trace(trace, validate=False)
        self._duckdb = duckdb
        self._lock = threading.Lock()
        con = duckdb.connect(":memory:")
        for name in TABLES:
            if name in self.trace.table_names:
                con.register(name, self.trace.table(name))
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        self.con = con

    @property
    def tables(self) -> list[str]:
        return [n for n in TABLES if n in self.trace.table_names]

    def _check(self, sql: str) -> None:
        if not sql.strip():
            raise UserError("the query is empty; give one SELECT statement, e.g. SELECT opcode, count(*) FROM instructions GROUP BY 1.")
        try:
            statements = self.con.extract_statements(sql)
        except self._duckdb.Error as exc:
            raise UserError(f"the query is not valid SQL: {_sentence(exc)}.") from None
        if len(statements) != 1:
            raise UserError(f"give one SQL statement (the query has {len(statements)}).")
        kind = statements[0].type.name
        if kind not in self.ALLOWED:
            raise UserError(f"queries are read-only: {kind} statements are not allowed, only SELECT (and WITH ... SELECT, EXPLAIN, DESCRIBE, SHOW).")

    def run(self, sql: str) -> pa.Table:
        """The query's result as an Arrow table (see `plain` for its types); bad SQL raises UserError."""
        self._check(sql)
        with self._lock:
            try:
                rel = self.con.sql(sql)
                result = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()  # DuckDB 2 renamed it
            except self._duckdb.InterruptException:
                raise UserError("the query was cancelled.") from None
            except self._duckdb.PermissionException:
                raise UserError("queries read only the trace's tables (" + ", ".join(self.tables) + "), not other files.") from None
            except self._duckdb.CatalogException as exc:
                missing = [f"{n} (format {TABLES[n].since} on; this trace is {self.trace.version})" for n in TABLES
                           if n not in self.tables and n in str(exc)]
                lacks = f"; it has no {', '.join(missing)}" if missing else ""
                raise UserError(f"the query failed: {_sentence(exc)}; the trace's tables are " + ", ".join(self.tables)
                                + lacks + ".") from None
            except self._duckdb.Error as exc:
                raise UserError(f"the query failed: {_sentence(exc)}.") from None
        return plain(result)

    def interrupt(self) -> None:
        """Stop the running query (it then raises 'the query was cancelled')."""
        self.con.interrupt()

    def close(self) -> None:
        self.con.close()


def query(trace: Trace | str, sql: str) -> pa.Table:
    """Run one read-only query over a trace's tables: `query("run.trnx", "SELECT ...")`."""
    q = TraceQuery(trace)
    try:
        return q.run(sql)
    finally:
        q.close()
