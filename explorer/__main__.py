"""`python -m explorer [TRACE]` (and the `trn3-explorer` launcher): open the window."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print("usage: python -m explorer [TRACE.trnx]\n\nOpen Trn3 Explorer, loading TRACE if given.")
        return 0
    from explorer.ui import run

    return run(args[0] if args else None)


if __name__ == "__main__":
    sys.exit(main())
