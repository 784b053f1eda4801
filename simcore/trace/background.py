"""A TraceWriter whose writes run on a thread, so the disk works while the caller computes.

A capture of 100M events writes ~9 GB; past the kernel's dirty-page limits every write waits for
the disk, which then sets the pace of the whole capture unless the simulation runs meanwhile.
Arrow's file writes release the GIL, so one writer thread overlaps them with the simulation and
with building the next table's rows. Only the file writes run there: each batch is prepared
(checked, its dictionary codes made the table's: `TraceWriter.prepare`) and shown to the writer's
observer in the caller's thread, which would otherwise wait for the queue while the writer thread
did everything (in a 100M-event capture the observer's index and checks were a quarter of that
thread's time, and the thread set the capture's pace). Writes keep their order (one thread,
first in first out, prepared in the order written), so the files are byte for byte what the
same writes give in the caller's thread. At most `max_bytes` of rows wait in the queue (one batch
at a time whatever its size), which bounds the memory a slow disk can make the caller hold.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
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
    """`write` queues rows for `writer` on a thread; `close` waits for them and closes the writer.

    An error on the thread is raised by the next `write`, `drain` or `close`; `abort` drops what
    waits and aborts the writer (nothing is left at its path)."""

    def __init__(self, writer: TraceWriter, max_bytes: int = 256 << 20) -> None:
        self.writer = writer
        self.max_bytes = max_bytes
        self._queue: deque[tuple[str, pa.RecordBatch, int | None, int]] = deque()
        self._queued = 0
        self._busy = False
        self._error: BaseException | None = None
        self._stop = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="trace-writer", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        return self.writer.path

    def write(self, table: str, data: TableData, *, chip: int | None = None) -> None:
        """Queue rows for `table` (as TraceWriter.write), waiting while too many bytes wait. The rows
        are checked and shown to the observer here, in the caller's thread (errors in them raise now)."""
        with self._cond:
            self._raise()
        batch = self.writer.prepare(table, data, chip=chip)
        if batch.num_rows and self.writer.observer is not None:
            self.writer.observer(table, chip, batch)
        n = _nbytes(data)
        with self._cond:
            while self._error is None and self._queue and self._queued + n > self.max_bytes:
                self._cond.wait()
            self._raise()
            self._queue.append((table, batch, chip, n))
            self._queued += n
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every queued write is done."""
        with self._cond:
            while self._error is None and (self._queue or self._busy):
                self._cond.wait()
            self._raise()

    def close(self) -> Path:
        """Finish the queued writes, stop the thread and close the writer (meta.json, final rename)."""
        try:
            self.drain()
        finally:
            self._finish_thread()
        return self.writer.close()

    def abort(self) -> None:
        """Drop the queued writes, stop the thread and abort the writer."""
        with self._cond:
            self._queue.clear()
            self._queued = 0
        self._finish_thread()
        self.writer.abort()

    def _finish_thread(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stop:
                    self._cond.wait()
                if not self._queue:
                    return
                table, batch, chip, n = self._queue.popleft()
                self._busy = True
            try:
                self.writer.append(table, chip, batch, observe=False)
                batch = None  # (its columns' memory may serve the next rows: simcore/capture/column_pool.py)
            except BaseException as e:  # raised in the caller's thread by its next call
                with self._cond:
                    self._error = e
                    self._queue.clear()
                    self._queued = 0
                    self._busy = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._queued -= n
                self._busy = False
                self._cond.notify_all()
