"""Run `trnx` in-process through its real entry point (`explorer.cli.main.main`), error handling
included: exit code, stdout and stderr as a user sees them, without a subprocess's startup cost."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass


@dataclass
class Result:
    code: int
    out: str
    err: str


def trnx(*args: str) -> Result:
    """`trnx ARGS...`; a traceback (a bug) propagates as the exception itself."""
    from explorer.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())


def one_sentence_error(result: Result) -> str:
    """The error sentence of a run that refused its input: exit 2, one line `trnx: error: ...`."""
    assert result.code == 2, (result.code, result.err[-2000:])
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trnx: error: "), result.err
    assert lines[0].rstrip().endswith((".", ")")) and "Traceback" not in result.err
    return lines[0].removeprefix("trnx: error: ")
