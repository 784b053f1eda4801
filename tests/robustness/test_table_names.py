"""A trace cannot make a command read outside itself (issue 12, item 8): meta.json's table file
names are accepted only as plain relative names inside the trace directory, and no symlink in a
table's path is followed. Every command says so in one sentence (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracegen import write_tiny
import clirun

COMMANDS = [["validate"], ["info"], ["summary", "--no-recommendations"], ["export", "--table", "instructions",
                                                                          "--format", "csv", "-o", "{out}"]]


def _set_file(trace: Path, name: str) -> None:
    meta = json.loads((trace / "meta.json").read_text())
    meta["tables"]["instructions"]["file"] = name
    (trace / "meta.json").write_text(json.dumps(meta))


@pytest.fixture
def traces(tmp_path):
    other = write_tiny(tmp_path / "other.trnx")
    return write_tiny(tmp_path / "t.trnx"), other


@pytest.mark.parametrize("name", ["../other.trnx/instructions.arrow", "{abs}", "./instructions.arrow",
                                  "instructions//x.arrow", "a\\..\\instructions.arrow", ""])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_table_named_outside_the_trace_is_refused(capsys, traces, tmp_path, name, command):
    t, other = traces
    _set_file(t, name.replace("{abs}", str(other / "instructions.arrow")))
    args = [a.replace("{out}", str(tmp_path / "x.csv")) for a in command]
    code, _, err = clirun.trnx(args[0], t, *args[1:])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "table 'instructions' names the file" in lines[0] and "not a plain relative name inside the trace" in lines[0]
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("command", COMMANDS[:1] + COMMANDS[2:], ids=lambda c: c[0])
def test_a_symlinked_table_file_is_not_followed(capsys, traces, tmp_path, command):
    t, other = traces
    (t / "instructions.arrow").unlink()
    (t / "instructions.arrow").symlink_to(other / "instructions.arrow")
    args = [a.replace("{out}", str(tmp_path / "x.csv")) for a in command]
    code, _, err = clirun.trnx(args[0], t, *args[1:])
    assert code == 2 and err.strip() == (f"trnx: error: {t / 'instructions.arrow'} is a symbolic link; a trace's table "
                                         "files must be plain files inside its directory."), err


def test_a_symlinked_partition_directory_is_not_followed(capsys, tmp_path):
    from simcore.trace import TraceWriter
    from tracegen import tiny_tables

    def partitioned(path: Path) -> Path:
        with TraceWriter(path) as w:
            for name, data in tiny_tables().items():
                w.write(name, data, chip=0) if name == "instructions" else w.write(name, data)
        return path

    t, other = partitioned(tmp_path / "t.trnx"), partitioned(tmp_path / "other.trnx")
    shutil.rmtree(t / "instructions")
    (t / "instructions").symlink_to(other / "instructions")
    code, _, err = clirun.trnx("validate", t)
    assert code == 2 and f"{t / 'instructions'} is a symbolic link" in err


def test_a_trace_directory_reached_through_a_symlink_still_opens(capsys, traces, tmp_path):
    t, _ = traces
    (tmp_path / "alias.trnx").symlink_to(t)
    assert clirun.trnx("validate", tmp_path / "alias.trnx")[0] == 0
