"""Writers used in a `with` block: committed when the block succeeds, aborted when it raises.

Both the trace writer and its background-thread wrapper promise the same thing -- a trace
appears at its path only whole, and a failed or cancelled write leaves nothing behind -- so
the `with` protocol that keeps the promise is written once, here.
"""

from __future__ import annotations

from typing import Any, Self


class CommitOrAbort:
    """A `with` block ends in `close()` (commit) on success and in `abort()` on any exception,
    the commit's own included.

    Subclasses define both; `close()` must be safe to call again after an explicit call in the
    block (it commits once)."""

    def close(self) -> Any:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
            return
        try:
            self.close()
        except BaseException:  # a commit that fails (a write error surfacing at the end) leaves nothing either
            self.abort()
            raise
