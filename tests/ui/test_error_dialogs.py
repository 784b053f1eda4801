"""GUI error dialogs say one sentence (issue 12 item 11): a trace the validator refuses, an
out-of-memory open and a bug all reach the user as one sentence in the dialog, the same one the
CLI prints, never raw exception text such as "IndexError: index -6 ..."."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from clirun import one_sentence_error, trnx
from simcore.trace import write_trace
from tracegen import HARDWARE, tiny_tables


@pytest.fixture
def dialogs(monkeypatch) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda parent, title, text, *a: shown.append((title, text))))
    return shown


def _one_sentence(text: str) -> None:
    assert "\n" not in text and text.rstrip().endswith((".", ")")), text
    assert "Traceback" not in text and "Error:" not in text, text


def test_a_trace_validate_refuses_shows_the_cli_sentence(window, qtbot, tmp_path, dialogs) -> None:
    t = tiny_tables()
    t["tracks"]["chip"] = np.array([0, 0, 0, 0, 2**25], np.int32)  # one flipped bit
    bad = write_trace(tmp_path / "flipped.trnx", t, meta={"hardware": copy.deepcopy(HARDWARE)})
    window.open_path(bad)
    qtbot.waitUntil(lambda: bool(dialogs), timeout=20_000)
    title, text = dialogs[0]
    assert title == "Cannot open trace"
    _one_sentence(text)
    assert text == one_sentence_error(trnx("validate", bad))
    assert "has chip 33554432, but meta.json's hardware has 1 chip" in text


def _open_failing(window, qtbot, tmp_path, dialogs, monkeypatch, failure) -> tuple[str, str]:
    """Open a good trace while building its index fails with `failure`: (the trace, the dialog's text)."""
    from explorer.model.timeline.trace_index import TraceIndex

    monkeypatch.setattr(TraceIndex, "build", failure)
    other = write_trace(tmp_path / "other.trnx", tiny_tables(), meta={"hardware": HARDWARE})
    window.open_path(other)
    qtbot.waitUntil(lambda: bool(dialogs), timeout=20_000)
    _, text = dialogs[0]
    _one_sentence(text)
    return other, text


def test_a_bug_while_opening_is_one_sentence_that_says_so(window, qtbot, tmp_path, dialogs, monkeypatch, capsys) -> None:
    def broken(*args, **kwargs):
        raise IndexError("index -6 is out of bounds for axis 0 with size 4")

    other, text = _open_failing(window, qtbot, tmp_path, dialogs, monkeypatch, broken)
    assert "index -6" not in text
    assert text.startswith(f"an internal error (IndexError) stopped the attempt to open {other}")
    assert "IndexError: index -6" in capsys.readouterr().err  # the details stay on stderr


def test_out_of_memory_while_opening_names_the_need(window, qtbot, tmp_path, dialogs, monkeypatch) -> None:
    def exhausted(*args, **kwargs):
        np.empty(1 << 62, dtype=np.uint8)  # numpy's own MemoryError, with the size it asked for

    # the sentence for a process without an address-space limit, also when the suite runs under one
    # (prlimit --as): there it names the limit instead of the need
    monkeypatch.setattr("simcore.errors.address_space_limit", lambda: None)
    other, text = _open_failing(window, qtbot, tmp_path, dialogs, monkeypatch, exhausted)
    assert text.startswith(f"not enough memory to open {other} (it needs about ")
    assert "an allocation of 4,294,967,296 GiB failed" in text


def test_a_bug_in_a_background_analysis_is_one_sentence(qtbot) -> None:
    from explorer.ui.analysis_session import run_in_background

    got: list[tuple[bool, object]] = []

    def bug():
        raise IndexError("index -6 is out of bounds for axis 0 with size 4")

    run_in_background(bug, lambda ok, value: got.append((ok, value)))
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    ok, text = got[0]
    assert ok is False
    _one_sentence(text)
    assert text.startswith("an internal error (IndexError) stopped the attempt to run this analysis")
