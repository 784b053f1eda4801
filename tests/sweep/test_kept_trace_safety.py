"""`--keep-traces` writes each kept trace as `trnx capture -o` does (simcore.trace.target): a
file, a symlink or a directory that is not the configuration's own trace -- there before, or
appearing while the trace is written -- is never replaced; its row fails with one sentence."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

import simcore.trace.writer as writer_module
from explorer.cli.main import cli
from explorer.sweep import traces as traces_module
from explorer.sweep.results import read_rows
from explorer.sweep.store import SweepDir
from explorer.sweep.task import Task, run_task
from simcore.errors import UserError

FILE_AT, LINK_AT, RACED = "0000-tp=4-batch=1.trnx", "0002-tp=8-batch=1.trnx", "0003-tp=8-batch=16.trnx"


def test_kept_traces_never_replace_a_foreign_file(reference, tmp_path, monkeypatch):
    out = tmp_path / "s"
    shutil.copytree(reference, out)
    rows = read_rows(out / "results.parquet")
    traces = out / "traces"
    for name in (FILE_AT, LINK_AT, RACED):
        shutil.rmtree(traces / name)
    (traces / FILE_AT).write_text("my notes")                       # a user's file at a kept trace's name
    (traces / LINK_AT).symlink_to(tmp_path / "not-there")            # a dangling symlink of theirs
    SweepDir.open(out).write([r for r in rows if r["config"] not in (0, 2, 3)])   # as if those rows were lost

    real = writer_module.install

    def appears(tmp, target, overwrite):   # a file lands at config 3's name while its trace is written
        if target.name == RACED:
            target.write_text("arrived meanwhile")
        return real(tmp, target, overwrite)

    monkeypatch.setattr(writer_module, "install", appears)
    res = CliRunner().invoke(cli, ["sweep", "--resume", "--workers", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "3 configurations failed (see the reason column); --resume runs them again." in res.stderr
    after = {r["config"]: r for r in read_rows(out / "results.parquet")}
    for config, name in ((0, FILE_AT), (2, LINK_AT)):
        assert after[config]["status"] == "failed" and after[config]["trace"] is None
        assert after[config]["reason"] == (f"{traces / name} exists and is not this configuration's trace; it was "
                                           "left alone (move it away and --resume).")
    assert after[3]["status"] == "failed" and after[3]["reason"] == (
        f"{traces / RACED} appeared while this trace was being written; it was left alone and this trace was not kept.")
    assert (traces / FILE_AT).read_text() == "my notes"
    assert (traces / LINK_AT).is_symlink() and not (tmp_path / "not-there").exists()
    assert (traces / RACED).read_text() == "arrived meanwhile"
    assert sorted(p.name for p in traces.iterdir()) == sorted(p.name for p in (reference / "traces").iterdir())  # no temporaries left


def test_a_trace_sent_back_by_a_worker_never_replaces_a_foreign_file(reference, tmp_path, monkeypatch):
    options = {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1, "tp": 8, "batch": 1}
    outcome = run_task(Task(2, options, str(tmp_path / "not-seen"), "0" * 32, LINK_AT))   # the worker sees no sweep
    assert outcome.trace_files
    sweep, _ = SweepDir.start(tmp_path / "client", SweepDir.open(reference).spec, resume=False)
    traces = sweep.make_traces_dir()
    (traces / FILE_AT).write_text("my notes")
    with pytest.raises(UserError, match=r"exists and is not this configuration's trace; it was left alone"):
        sweep.install_trace(FILE_AT, outcome.trace_files, options)
    assert (traces / FILE_AT).read_text() == "my notes"

    real = traces_module.move_into_place

    def appears(tmp, target, overwrite):
        target.write_text("arrived meanwhile")
        return real(tmp, target, overwrite)

    monkeypatch.setattr(traces_module, "move_into_place", appears)
    with pytest.raises(UserError, match=r"appeared while this trace was being written; it was left alone"):
        sweep.install_trace(LINK_AT, outcome.trace_files, options)
    assert (traces / LINK_AT).read_text() == "arrived meanwhile"
    assert sorted(p.name for p in traces.iterdir()) == [FILE_AT, LINK_AT]   # the temporary sibling removed
