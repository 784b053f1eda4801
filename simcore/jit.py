"""numba's `njit`, or the undecorated function where numba is missing.

numba is a declared dependency; the fallback keeps simcore (and explorer's scanners, which
check HAVE_NUMBA and take their Python paths) importable without it."""

from __future__ import annotations

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        def wrap(f):
            return f

        return wrap(args[0]) if args and callable(args[0]) else wrap

__all__ = ["HAVE_NUMBA", "njit"]
