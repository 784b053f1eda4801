"""Run `trnx` in-process through its real entry point (`explorer.cli.main.main`), error handling
included: exit code, stdout and stderr as a user sees them, without a subprocess's startup cost.

The tests' one in-process runner: `trnx(...)` here, or the `trnx` fixture (tests/conftest.py) that
hands it to a test; `one_sentence` / `one_sentence_error` check the bad-input contract."""

from __future__ import annotations

import contextlib
import io
from typing import NamedTuple


class Result(NamedTuple):
    """What a user sees of one command (unpacks as code, out, err)."""

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


def one_sentence(err: str) -> str:
    """The one line of a refusal's stderr, `trnx: error: ...` (asserting it is one line, no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trnx: error: ") and "Traceback" not in err, err
    return lines[0]


def one_sentence_error(result: Result) -> str:
    """The error sentence of a run that refused its input: exit 2, one line `trnx: error: ...`."""
    assert result.code == 2, (result.code, result.err[-2000:])
    line = one_sentence(result.err)
    assert line.rstrip().endswith((".", ")")), result.err
    return line.removeprefix("trnx: error: ")
