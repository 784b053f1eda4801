"""numba's `njit`, or the undecorated function where numba is missing; `depends_on` for cached
functions that compile in code from other files.

numba is a declared dependency; the fallback keeps simcore (and explorer's scanners, which
check HAVE_NUMBA and take their Python paths) importable without it.

numba's on-disk cache (`cache=True`) is fresh while the function's own file is unchanged: it
stamps the index from that file alone (mtime, size, hash). A callee from another file is compiled
into the caller (inlined, or linked in), so an edit to the callee's file alone would leave the
caller's cached machine code stale, silently. `depends_on(module, ...)` adds a hash of those
modules' sources to the stamp, so such an edit makes numba compile the caller afresh.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        def wrap(f):
            return f

        return wrap(args[0]) if args and callable(args[0]) else wrap


def sources_digest(modules: tuple[ModuleType, ...]) -> str:
    """A hash of the modules' source files: changes whenever one of them is edited."""
    h = hashlib.sha256()
    for m in modules:
        path = Path(m.__file__)
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def depends_on(*modules: ModuleType):
    """Decorate an `njit(cache=True)` function (put it above `@njit`) whose compiled code takes in
    code from `modules`: its cache entries are fresh only for those modules' current sources."""
    def wrap(dispatcher):
        cache = getattr(dispatcher, "_cache", None)
        if cache is None:  # no numba: a plain Python function, nothing cached
            return dispatcher
        index = getattr(cache, "_cache_file", None)
        if index is None or not hasattr(index, "_source_stamp"):  # pragma: no cover - another numba's internals
            from numba.core.caching import NullCache

            dispatcher._cache = NullCache()  # compile in every process rather than risk stale code
            return dispatcher
        index._source_stamp = (index._source_stamp, sources_digest(modules))
        dispatcher.cache_depends_on = tuple(m.__name__ for m in modules)  # (tests check every caller declares its callees)
        return dispatcher

    return wrap


__all__ = ["HAVE_NUMBA", "depends_on", "njit", "sources_digest"]
