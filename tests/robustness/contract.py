"""The robustness contract every reader is held to.

An input either gives a result that passes validation, or a `UserError` whose
message is one sentence on one line. Any other exception is a bug.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from simcore.errors import UserError
from simcore.trace import open_trace


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root` -- a file by its bytes' SHA-256, a symlink by its target, a directory
    as '/' -- to compare the disk before and after a write that must touch nothing."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "/"
    return out


def assert_one_sentence(exc: UserError) -> None:
    msg = str(exc)
    assert msg and "\n" not in msg, f"not one line: {msg!r}"
    assert msg.rstrip().endswith((".", "?", ")")), f"not a sentence: {msg!r}"
    assert "Traceback" not in msg


def import_or_one_sentence(paths: list[Path], out: Path) -> bool:
    """Import Kineto files; True for a valid trace (also analysed and exported), False for a clean error."""
    from explorer.export import FORMATS
    from explorer.interop import import_kineto
    from explorer.model.analysis.temporal import breakdown, stragglers

    try:
        import_kineto(paths, out)
    except UserError as exc:
        assert_one_sentence(exc)
        assert not out.exists(), "a failed import left output behind"
        return False
    trace = open_trace(out)  # validates every table
    breakdown(trace)
    stragglers(trace)
    FORMATS["chrome-json"](trace, out.with_suffix(".json"), {})
    FORMATS["perfetto"](trace, out.with_suffix(".pftrace"), {})
    return True


def open_or_one_sentence(path: Path) -> bool:
    """Open (validate) a trace and read every table; True when it is valid."""
    try:
        from explorer.cli.commands.info import describe

        from explorer.export import FORMATS
        from explorer.model.analysis.summary import summarize
        from explorer.model.analysis.temporal import breakdown, stragglers

        describe(str(path))  # `trnx info`: meta only (no validation), row counts, chips, names
        trace = open_trace(path)
        for name in trace.table_names:
            trace.table(name).to_pandas()
        summarize(trace)  # what `trnx validate` accepts, `trnx summary` summarises
        breakdown(trace)
        stragglers(trace)
        FORMATS["chrome-json"](trace, path.parent / "t.json", {})
        FORMATS["perfetto"](trace, path.parent / "t.pftrace", {})
    except UserError as exc:
        assert_one_sentence(exc)
        return False
    return True


def import_profile_or_one_sentence(paths: list[Path], out: Path) -> bool:
    """Import Neuron Explorer profile directories; True for a valid trace (also summarised and
    exported), False for a clean one-sentence error that left nothing behind."""
    from explorer.export import FORMATS
    from explorer.interop.neuron_profile import import_neuron_profile
    from explorer.model.analysis.profile_summary import profile_comparison
    from explorer.model.analysis.summary import summarize

    try:
        import_neuron_profile(paths, out)
    except UserError as exc:
        assert_one_sentence(exc)
        assert not out.exists(), "a failed import left output behind"
        return False
    trace = open_trace(out)  # validates every table
    summarize(trace)
    profile_comparison(trace)
    FORMATS["perfetto"](trace, out.with_suffix(".pftrace"), {})
    return True
