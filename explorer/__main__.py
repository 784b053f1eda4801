"""`python -m explorer [TRACE] [--smoke-test]` (the `trn3-explorer` launcher and the packaged app)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m explorer [TRACE.trnx] [--smoke-test]

Open Trn3 Explorer, loading TRACE if given.

options:
  --smoke-test   build the window, load TRACE, render one frame and exit (packaging check;
                 set QT_QPA_PLATFORM=offscreen where there is no display)
  --version      print the version and exit
  -h, --help     show this help and exit"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return 0
    if "--version" in args:
        from explorer import __version__

        print(f"trn3-explorer {__version__}")
        return 0
    smoke = "--smoke-test" in args
    rest = [a for a in args if a != "--smoke-test"]
    unknown = [a for a in rest if a.startswith("-")]
    from simcore.errors import UserError

    try:
        if unknown:
            raise UserError(f"unknown option {unknown[0]}; see --help.")
        if len(rest) > 1:
            raise UserError(f"give one trace at most (got {len(rest)}: {' '.join(rest)}).")
        from explorer.cli.commands.view import open_explorer

        return open_explorer(rest[0] if rest else None, smoke, prog="trn3-explorer")
    except UserError as exc:
        print(f"trn3-explorer: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
