"""A TraceWriter whose work runs on two threads, so the disk and a second core work while the
caller computes.

A capture of 100M events writes ~9 GB, which takes the disk ~9 s: the simulation runs meanwhile.
Each batch goes through two stages after `write` queues it:

- `trace-prepare`: the rows checked and made a record batch with the table's dictionary codes
  (`TraceWriter.prepare`), then shown to the writer's observer (a capture's timeline index
  recorder, which scans and checks every row). In a 100M-event capture that is ~2.5 s of CPU the
  caller (the simulation, building each track's rows) no longer spends: on 2 cores the two run
  at once. Most of it is numpy, Arrow and compiled scans that let go of the GIL.
- `trace-writer`: the file writes (`TraceWriter.append`: Arrow's IPC writer, its buffers copied
  into page-aligned chunks that two more threads hash and write with O_DIRECT,
  simcore/trace/diskwrite.py), which let go of the GIL for the copies, hashes and writes.

Each stage is one thread taking its queue first in first out, so batches are prepared, observed
and appended in the order written: the files are byte for byte what the same writes give in the
caller's thread, and the observer sees what a reader will find, in that order. At most
`max_bytes` of rows wait in both queues together (one batch at a time whatever its size), which
bounds the memory a slow disk can make the caller hold.

An error on either thread (rows that do not fit the schema, an observer's failure, a full disk)
is raised by the caller's next `write`, `drain` or `close`; `abort` (a `with` block that raises
does) drops what waits and leaves nothing at the trace's path.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from simcore.trace.commit import CommitOrAbort
from simcore.trace.writer import TableData, TraceWriter


def _nbytes(data: TableData) -> int:
    if isinstance(data, Mapping):
        return sum(v.nbytes for v in data.values() if isinstance(v, np.ndarray))
    return int(getattr(data, "nbytes", 0))


class BackgroundWriter(CommitOrAbort):
    """`write` queues rows for `writer`; `close` waits for them and closes the writer.

    An error on a thread is raised by the next `write`, `drain` or `close`; `abort` drops what
    waits and aborts the writer (nothing is left at its path)."""

    def __init__(self, writer: TraceWriter, max_bytes: int = 256 << 20) -> None:
        self.writer = writer
        self.max_bytes = max_bytes
        self._incoming: deque[tuple[str, Any, int | None, int]] = deque()  # to prepare
        self._prepared: deque[tuple[str, pa.RecordBatch, int | None, int]] = deque()  # to write
        self._queued = 0  # bytes in both queues and in the stages' hands
        self._busy = 0  # items a stage has taken and not finished
        self._error: BaseException | None = None
        self._stop = False
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._stage, args=(self._incoming, self._prepare, self._prepared.append),
                             name="trace-prepare", daemon=True),
            threading.Thread(target=self._stage, args=(self._prepared, self._append, self._release),
                             name="trace-writer", daemon=True)]
        for t in self._threads:
            t.start()

    @property
    def path(self) -> Path:
        return self.writer.path

    def write(self, table: str, data: TableData, *, chip: int | None = None) -> None:
        """Queue rows for `table` (as TraceWriter.write), waiting while too many bytes wait. The
        caller must not change `data`'s arrays afterwards (they are written as they are then)."""
        n = _nbytes(data)
        with self._cond:
            while self._error is None and self._queued and self._queued + n > self.max_bytes:
                self._cond.wait()
            self._raise()
            if self._stop:
                raise RuntimeError("trace writer is closed")
            self._incoming.append((table, data, chip, n))
            self._queued += n
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every queued write is done."""
        with self._cond:
            while self._error is None and (self._incoming or self._prepared or self._busy):
                self._cond.wait()
            self._raise()

    def close(self) -> Path:
        """Finish the queued writes, stop the threads and close the writer (meta.json, final rename)."""
        try:
            self.drain()
        finally:
            self._finish_threads()
        return self.writer.close()

    def abort(self) -> None:
        """Drop the queued writes, stop the threads and abort the writer."""
        self._finish_threads()
        self.writer.abort()

    def _finish_threads(self) -> None:
        """Stop both threads (each finishes the batch in its hands, drops the rest) and wait for them."""
        with self._cond:
            self._stop = True
            self._incoming.clear()
            self._prepared.clear()
            self._cond.notify_all()
        for t in self._threads:
            t.join()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _fail(self, e: BaseException) -> None:
        """(With the lock held.) Keep the first error for the caller; nothing more is done."""
        if self._error is None:
            self._error = e
        self._incoming.clear()
        self._prepared.clear()
        self._queued = 0
        self._busy = 0
        self._cond.notify_all()

    def _stage(self, source: deque, work: Callable[[Any], Any], done: Callable[[Any], None]) -> None:
        """One stage's thread: take `source` first in first out, `work` on each item outside the lock,
        then `done(result)` under it. An error is kept for the caller and ends the stage."""
        while True:
            with self._cond:
                while not source and not self._stop and self._error is None:
                    self._cond.wait()
                if self._stop or self._error is not None:
                    return
                item = source.popleft()
                self._busy += 1
            try:
                result = work(item)
                item = None  # (a column pool's block is free once no queued or written batch refers to it)
            except BaseException as e:  # raised in the caller's thread by its next call
                with self._cond:
                    self._fail(e)
                return
            with self._cond:
                self._busy -= 1
                if self._stop or self._error is not None:
                    return
                done(result)
                result = None
                self._cond.notify_all()

    def _prepare(self, item: tuple[str, Any, int | None, int]) -> tuple[str, pa.RecordBatch, int | None, int]:
        """(trace-prepare) The batch, shown to the observer."""
        table, data, chip, n = item
        w = self.writer
        batch = w.prepare(table, data, chip=chip)
        if batch.num_rows and w.observer is not None:
            w.observer(table, chip, batch)
        return table, batch, chip, n

    def _append(self, item: tuple[str, pa.RecordBatch, int | None, int]) -> int:
        """(trace-writer) The batch written; its bytes leave the queues."""
        table, batch, chip, n = item
        self.writer.append(table, chip, batch, observe=False)
        return n

    def _release(self, n: int) -> None:
        self._queued -= n
