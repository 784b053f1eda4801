"""Never destroy what the tool did not create (issue 12, items 1-2): `--overwrite` replaces only a
trace trnx wrote, and the final move never replaces what appeared meanwhile.

Each case runs the real `trnx` entry point (in process: argument parsing, the error path and
the exit code are the CLI's) and then looks at the disk as the user would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import simcore.capture.engine as engine
from interop.kineto_samples import write_ranks
from robustness.contract import tree
from simcore.trace import open_trace
from clirun import one_sentence

GEMM = ["capture", "-w", "gemm", "--shape", "256,256,256", "-q"]


def capture_rows(path: Path) -> int:
    return int(open_trace(path).workload["m"])


@pytest.mark.parametrize("make, why", [
    (lambda p: (p.mkdir(), (p / "docs").mkdir(), (p / "docs" / "f").write_text("x")), "is not a trace trnx wrote"),
    (lambda p: p.write_text("my notes"), "is a file, not a trace"),
    (lambda p: p.mkdir(), "it has no meta.json"),
    (lambda p: (p.mkdir(), (p / "meta.json").write_text('{"format": "other"}')), "does not say format 'trnx-trace'"),
])
def test_overwrite_refuses_what_is_not_a_trace_and_touches_nothing(trnx, tmp_path, make, why):
    out = tmp_path / "d"
    make(out)
    before = tree(tmp_path)
    code, _, err = trnx(*GEMM, "-o", out, "--overwrite")
    assert code == 2 and why in one_sentence(err)
    assert "--overwrite replaces only a trace trnx wrote, so it was left alone" in err
    assert tree(tmp_path) == before  # nothing removed, nothing left behind


def _symlink_to_a_trace(trnx, tmp_path: Path) -> Path:
    real = tmp_path / "real.trnx"
    assert trnx(*GEMM, "-o", real)[0] == 0
    link = tmp_path / "link.trnx"
    link.symlink_to(real.name)
    return link


def _trace_holding_a_users_file(trnx, tmp_path: Path) -> Path:
    out = tmp_path / "run.trnx"
    assert trnx(*GEMM, "-o", out)[0] == 0
    (out / "notes.txt").write_text("my analysis")
    return out


@pytest.mark.parametrize("prepare, says", [(_symlink_to_a_trace, "{out} is a symbolic link"),
                                           (_trace_holding_a_users_file, "{out} holds notes.txt, which trnx did not write")])
def test_overwrite_refuses_a_symlink_or_a_trace_holding_a_users_file(trnx, tmp_path, prepare, says):
    out = prepare(trnx, tmp_path)
    before = tree(tmp_path)
    code, _, err = trnx(*GEMM, "-o", out, "--overwrite")
    assert code == 2 and says.format(out=out) in one_sentence(err)
    assert tree(tmp_path) == before


def test_overwrite_replaces_a_trace_of_ours_with_its_index_cache(trnx, tmp_path):
    out = tmp_path / "run.trnx"
    assert trnx(*GEMM, "-o", out)[0] == 0
    (out / "timeline-index.cache").write_bytes(b"the tool's own disposable file")
    code, _, err = trnx("capture", "-w", "gemm", "--shape", "512,256,256", "-q", "-o", out, "--overwrite")
    assert code == 0, err
    assert capture_rows(out) == 512
    assert not (out / "timeline-index.cache").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run.trnx"]  # no temporary, no old trace left


def test_import_overwrite_follows_the_same_rules(trnx, tmp_path):
    paths = write_ranks(tmp_path)
    out = tmp_path / "run.trnx"
    out.mkdir()
    (out / "keep.me").write_text("x")
    code, _, err = trnx("import", *paths, "-o", out, "--overwrite")
    assert code == 2 and "is not a trace trnx wrote" in one_sentence(err)
    assert (out / "keep.me").read_text() == "x" and len(list(out.iterdir())) == 1
    out2 = tmp_path / "imported.trnx"
    assert trnx("import", *paths, "-o", out2)[0] == 0
    assert trnx("import", *paths, "-o", out2, "--overwrite")[0] == 0
    open_trace(out2)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _meanwhile(monkeypatch, action):
    """Run `action()` while the capture simulates (after the start's checks, before the write)."""
    real = engine.simulate

    def simulate(*args, **kwargs):
        action()
        return real(*args, **kwargs)
    monkeypatch.setattr(engine, "simulate", simulate)


def test_a_directory_that_appears_during_the_capture_is_left_alone(trnx, tmp_path, monkeypatch):
    out = tmp_path / "results"
    _meanwhile(monkeypatch, lambda: (out.mkdir(), (out / "notes.txt").write_text("mine")))
    code, _, err = trnx(*GEMM, "-o", out)
    assert code == 2 and f"{out} appeared while this trace was being written" in one_sentence(err)
    assert tree(tmp_path) == {"results": "/", "results/notes.txt": tree(out)["notes.txt"]}


def test_a_file_added_to_the_old_trace_during_an_overwrite_keeps_both(trnx, tmp_path, monkeypatch):
    out = tmp_path / "results.trnx"
    assert trnx(*GEMM, "-o", out)[0] == 0
    _meanwhile(monkeypatch, lambda: (out / "notes.txt").write_text("mine"))
    code, _, err = trnx("capture", "-w", "gemm", "--shape", "512,256,256", "-q", "-o", out, "--overwrite")
    assert code == 2 and f"{out} holds notes.txt" in one_sentence(err)
    assert (out / "notes.txt").read_text() == "mine" and capture_rows(out) == 256  # the old trace, whole
    assert [p.name for p in tmp_path.iterdir()] == ["results.trnx"]


def test_a_file_replacing_the_old_trace_during_an_overwrite_is_left_alone(trnx, tmp_path, monkeypatch):
    out = tmp_path / "results.trnx"
    assert trnx(*GEMM, "-o", out)[0] == 0

    def swap() -> None:
        import shutil
        shutil.rmtree(out)
        out.write_text("a file now")
    _meanwhile(monkeypatch, swap)
    code, _, err = trnx(*GEMM, "-o", out, "--overwrite")
    assert code == 2 and f"{out} is a file, not a trace" in one_sentence(err)
    assert out.read_text() == "a file now"
    assert [p.name for p in tmp_path.iterdir()] == ["results.trnx"]


def test_two_captures_to_one_path_one_wins_the_other_fails_cleanly(tmp_path):
    out = tmp_path / "same.trnx"
    cmd = [sys.executable, "-m", "explorer.cli.main", *GEMM, "-o", str(out)]
    procs = [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in results) == [0, 2], results
    err = next(e for code, e in results if code == 2)
    assert "already exists" in err or "appeared while this trace was being written" in err
    one_sentence(err)
    open_trace(out)
    assert [p.name for p in tmp_path.iterdir()] == ["same.trnx"]


def test_the_meta_json_decides_what_is_ours(tmp_path):
    """A partitioned trace's chip directories and files are ours; a stray file inside one is not."""
    from simcore.trace import TraceWriter
    from simcore.trace.target import not_ours
    from tracegen import tiny_tables

    out = tmp_path / "p.trnx"
    with TraceWriter(out) as w:
        for name, data in tiny_tables().items():
            w.write(name, data, chip=0) if name == "instructions" else w.write(name, data)
    assert json.loads((out / "meta.json").read_text())["tables"]["instructions"]["partitions"]
    assert not_ours(out) is None
    (out / "instructions" / "chip=0" / "x.csv").write_text("mine")
    assert "holds instructions/chip=0/x.csv" in not_ours(out)


# -- trnx export (item 3) ---------------------------------------------------------------------
@pytest.fixture
def small(trnx, tmp_path):
    out = tmp_path / "t.trnx"
    assert trnx(*GEMM, "-o", out)[0] == 0
    return out


@pytest.mark.parametrize("where", ["meta.json", "tracks.arrow", "new.csv", "../t.trnx/x.csv"])
def test_export_never_writes_inside_a_trace(trnx, small, where):
    before = tree(small.parent)
    code, _, err = trnx("export", small, "--table", "tracks", "--format", "csv", "-o", small / where, "--overwrite")
    assert code == 2 and "trnx never writes into a trace directory" in one_sentence(err)
    assert tree(small.parent) == before
    open_trace(small)


def test_export_into_a_trace_through_a_symlinked_directory_is_refused(trnx, small, tmp_path):
    (tmp_path / "alias").symlink_to(small.name)
    code, _, err = trnx("export", small, "--table", "tracks", "--format", "csv", "-o", tmp_path / "alias" / "meta.json",
                     "--overwrite")
    assert code == 2 and f"is inside the trace {small.resolve()}" in one_sentence(err)
    open_trace(small)


def test_export_refuses_an_existing_file_without_overwrite(trnx, small, tmp_path):
    out = tmp_path / "tracks.csv"
    out.write_text("my spreadsheet")
    code, _, err = trnx("export", small, "--table", "tracks", "--format", "csv", "-o", out)
    assert code == 2 and f"{out} already exists; choose another name or pass --overwrite." in one_sentence(err)
    assert out.read_text() == "my spreadsheet"
    assert trnx("export", small, "--table", "tracks", "--format", "csv", "-o", out, "--overwrite")[0] == 0
    assert out.read_text().startswith('"track_id"')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trnx", "tracks.csv"]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "chrome-json", "perfetto", "neuron-explorer"])
def test_export_with_overwrite_never_replaces_a_directory_or_a_symlink(trnx, small, tmp_path, fmt):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "keep").write_text("x")
    (tmp_path / "target.txt").write_text("linked")
    (tmp_path / "link").symlink_to("target.txt")
    before = tree(tmp_path)
    for out, why in ((tmp_path / "dir", "directory"), (tmp_path / "link", "symbolic link")):
        table = ["--table", "tracks"] if fmt in ("csv", "parquet") else []  # (the others write every table)
        code, _, err = trnx("export", small, *table, "--format", fmt, "-o", out, "--overwrite")
        sentence = one_sentence(err)
        assert code == 2 and (why in sentence or "already exists" in sentence), sentence
    assert tree(tmp_path) == before


def test_a_file_that_appears_during_an_export_is_left_alone(small, tmp_path, monkeypatch, trnx):
    import explorer.export.tables as tables

    out = tmp_path / "x.csv"
    real = tables._plain

    def plain(*args, **kwargs):   # a batch being written: the output is being written
        out.write_text("appeared")
        return real(*args, **kwargs)
    monkeypatch.setattr(tables, "_plain", plain)
    code, _, err = trnx("export", small, "--table", "tracks", "--format", "csv", "-o", out)
    assert code == 2 and "appeared while it was being written" in one_sentence(err)
    assert out.read_text() == "appeared"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trnx", "x.csv"]


def test_a_capture_inside_a_trace_is_refused(trnx, small):
    code, _, err = trnx(*GEMM, "-o", small / "inner.trnx")
    assert code == 2 and "trnx never writes into a trace directory" in one_sentence(err)
    assert not (small / "inner.trnx").exists()


def test_import_refuses_the_output_before_reading_its_inputs(trnx, tmp_path, monkeypatch):
    from explorer.interop.kineto import importer

    def never(*args, **kwargs):
        raise AssertionError("the inputs were read although the output is refused")
    monkeypatch.setattr(importer, "_import", never)
    out = tmp_path / "taken"
    out.write_text("mine")
    code, _, err = trnx("import", tmp_path / "rank0.json", "-o", out, "--overwrite")
    assert code == 2 and f"{out} is a file, not a trace" in one_sentence(err)
    assert out.read_text() == "mine"


@pytest.mark.parametrize("raised", ["os", "arrow"])
def test_a_failed_write_names_the_users_path_not_the_hidden_temporary(tmp_path, raised):
    """`trnx query -o /sys/x.csv` said 'cannot access /sys/.x.csv.trnx-tmp-351-...: Permission
    denied.' (and a Parquet output Arrow's 'Failed to open local file ...trnx-tmp...'): the user
    never named that file. The sentence names their path; nothing is left behind."""
    from simcore.atomic import atomic_path
    from simcore.errors import describe

    target = tmp_path / "x.csv"
    with pytest.raises(OSError) as caught:
        with atomic_path(target) as tmp:
            if raised == "os":
                raise PermissionError(13, "Permission denied", str(tmp))
            raise OSError(f"Failed to open local file '{tmp}'. Detail: [errno 13] Permission denied")
    assert describe(caught.value) == f"cannot access {target}: Permission denied."
    assert list(tmp_path.iterdir()) == []
