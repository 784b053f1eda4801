"""Every code block of docs/python-api.md runs as written, in order, in one namespace (later
blocks open the traces earlier ones captured), from a directory holding the samples."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "python-api.md"


def blocks() -> list[str]:
    found = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(found) >= 8, "docs/python-api.md lost its examples"
    return found


def test_every_block_runs(tmp_path, monkeypatch):
    (tmp_path / "sample_traces").symlink_to(ROOT / "sample_traces", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    scope: dict = {"__name__": "__docs__"}
    out = io.StringIO()
    for i, code in enumerate(blocks()):
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(code, f"docs/python-api.md block {i + 1}", "exec"), scope)
            except Exception as exc:  # say which block broke
                raise AssertionError(f"block {i + 1} of docs/python-api.md failed: {exc!r}\n{code}") from exc
    printed = out.getvalue()
    # what the prose promises the blocks show
    assert "capture cancelled; nothing was written." in printed
    assert "exceed llama3.1-8b's maximum context of 131072" in printed
    assert "MXFP8 takes" in printed
    for name in ("gemm-bf16.trnx", "gemm-mxfp8.trnx", "decode.trnx", "tp4.trnx"):
        assert (tmp_path / name / "meta.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["sample_traces", "gemm-bf16.trnx", "gemm-mxfp8.trnx", "decode.trnx", "tp4.trnx", "sweep"])  # cancelled: nothing
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["results.parquet", "sweep.json", "traces"]


def test_the_printed_error_is_the_one_in_the_comment():
    text = DOC.read_text(encoding="utf-8")
    comment = re.search(r"print\(err\)\s+# (\d+ tokens exceed .*?\.)\n", text)
    import simcore
    from simcore.errors import ConfigError

    try:
        simcore.capture(workload="llama3.1-8b", phase="decode", context=200_000, out_path="never.trnx")
    except ConfigError as err:
        assert comment and str(err) == comment.group(1)
    else:
        raise AssertionError("the documented bad capture was accepted")
