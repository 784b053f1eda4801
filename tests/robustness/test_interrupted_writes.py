"""A write cut short leaves nothing behind (issue 12, item 4): SIGTERM is handled like Ctrl+C by
`trnx capture`, `import` and `export` (exit 143, one line, temporaries removed), and what a
SIGKILL leaves -- only the tool's recognisably named temporaries whose process is gone from this
machine -- is removed by the next write into that directory. Nothing else is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from interop.kineto_samples import write_ranks
from simcore.tempfiles import host_tag
from simcore.trace import open_trace
import clirun

GEMM = ["capture", "-w", "gemm", "--shape", "256,256,256", "-q"]
SLOW = ["capture", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "2048", "--layers", "4", "--detail",
        "instruction", "--cores", "all", "-q"]
main_thread_only = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                      reason="signals reach only the main thread")


def temporaries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


def start_and_wait_for_temporary(tmp_path: Path, out: Path) -> subprocess.Popen:
    """A slow capture, once its temporary trace directory exists (it is writing)."""
    proc = subprocess.Popen([sys.executable, "-m", "explorer.cli.main", *SLOW, "-o", str(out)],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not temporaries(tmp_path):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def test_sigterm_during_a_capture_exits_143_and_leaves_nothing(tmp_path):
    out = tmp_path / "run.trnx"
    proc = start_and_wait_for_temporary(tmp_path, out)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    err = proc.stderr.read()
    assert code == 143, err
    assert err.strip() == "trnx: terminated (SIGTERM); nothing half-written was left behind."
    assert list(tmp_path.iterdir()) == []


def test_what_a_killed_capture_left_is_removed_by_the_next_write(tmp_path, capsys):
    proc = start_and_wait_for_temporary(tmp_path, tmp_path / "run.trnx")
    proc.kill()
    proc.wait(timeout=60)
    left = temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(".run.trnx.trnx-tmp-")
    assert clirun.trnx(*GEMM, "-o", tmp_path / "next.trnx")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.trnx"]


@main_thread_only
def test_sigterm_during_an_export_removes_its_temporary(tmp_path, capsys, monkeypatch):
    import explorer.export.tables as tables

    trace = tmp_path / "t.trnx"
    assert clirun.trnx(*GEMM, "-o", trace)[0] == 0
    real = tables._plain

    def plain(batch):   # the CSV is being written
        os.kill(os.getpid(), signal.SIGTERM)
        return real(batch)
    monkeypatch.setattr(tables, "_plain", plain)
    code, _, err = clirun.trnx("export", trace, "--table", "tracks", "--format", "csv", "-o", tmp_path / "x.csv")
    assert code == 143 and "terminated (SIGTERM)" in one_sentence_any(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trnx"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


@main_thread_only
def test_sigterm_during_an_import_removes_its_temporary(tmp_path, capsys, monkeypatch):
    from simcore.trace import writer

    paths = write_ranks(tmp_path)
    real = writer.TraceWriter.write

    def write(self, *args, **kwargs):   # the trace is being written
        os.kill(os.getpid(), signal.SIGTERM)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(writer.TraceWriter, "write", write)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = clirun.trnx("import", *paths, "-o", tmp_path / "run.trnx")
    assert code == 143 and "terminated (SIGTERM)" in one_sentence_any(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def one_sentence_any(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]   # (click writes a blank line on an abort)
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_only_our_temporaries_of_gone_processes_are_cleaned(tmp_path, capsys):
    here, dead = host_tag(), _dead_pid()
    kept_trace = tmp_path / "kept.trnx"
    assert clirun.trnx(*GEMM, "-o", kept_trace)[0] == 0

    def make_dir(name: str) -> Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / "instructions.arrow").write_bytes(b"x" * 100)
        return tmp_path / name

    removed = [make_dir(f".a.trnx.trnx-tmp-{dead}-{here}0123abcd").name,      # a killed capture's
               make_dir(f".b.trnx.tmp-{dead}-0123abcd").name]                   # an earlier version's
    (tmp_path / f".c.csv.trnx-tmp-{dead}-{here}0123abcd").write_text("half an export")
    removed.append(f".c.csv.trnx-tmp-{dead}-{here}0123abcd")
    kept = [make_dir(f".d.trnx.trnx-tmp-{os.getppid()}-{here}0123abcd").name,  # a live process's
            make_dir(f".e.trnx.trnx-tmp-{dead}-{'0' * 8 if here != '0' * 8 else '1' * 8}0123abcd").name,  # another machine's
            make_dir(".notes.tmp").name, make_dir(f".f.trnx.tmp-{dead}-not-ours").name]
    # an interrupted --overwrite: the old trace moved aside, its name free -> put back
    os.rename(kept_trace, tmp_path / f".kept.trnx.trnx-old-{dead}-{here}0123abcd")
    # an interrupted --overwrite whose name was taken since, holding a user's file -> shown, not removed
    assert clirun.trnx(*GEMM, "-o", tmp_path / "g.trnx")[0] == 0
    foreign = make_dir(f".g.trnx.trnx-old-{dead}-{here}0123abcd")
    (foreign / "mine.txt").write_text("mine")

    assert clirun.trnx(*GEMM, "-o", tmp_path / "new.trnx")[0] == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert not names & set(removed)
    assert set(kept) <= names
    assert "kept.trnx" in names and open_trace(kept_trace)
    shown = [n for n in names if n.startswith("g.trnx.moved-aside-")]
    assert len(shown) == 1 and (tmp_path / shown[0] / "mine.txt").read_text() == "mine"
    assert names - set(kept) == {"kept.trnx", "g.trnx", "new.trnx", shown[0]}
