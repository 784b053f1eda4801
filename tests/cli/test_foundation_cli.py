"""`trnx --version`, `info`, `validate` and `export` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq
from simcore.trace import FORMAT_VERSION
import pytest

from explorer import __version__
from explorer.cli.main import COMMANDS
from tracegen import write_tiny


def trnx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny(tmp_path_factory.mktemp("cli") / "tiny.trnx")


def test_version():
    proc = trnx("--version")
    assert proc.returncode == 0 and __version__ in proc.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command):
    proc = trnx(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: trnx {command}")


def test_info_lists_hardware_rows_and_tracks(tiny):
    proc = trnx("info", str(tiny))
    assert proc.returncode == 0, proc.stderr
    assert "test-chip" in proc.stdout
    assert "instructions" in proc.stdout and " 8" in proc.stdout
    assert "chip 0    5 tracks" in proc.stdout
    facts = json.loads(trnx("info", str(tiny), "--json").stdout)
    assert facts["rows"]["dma"] == 2 and facts["tracks_per_chip"] == {"0": 5}
    assert facts["span_ns"] == [0, 400]


def test_validate_ok(tiny):
    proc = trnx("validate", str(tiny))
    assert proc.returncode == 0 and f"valid trace format {FORMAT_VERSION}" in proc.stdout


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_table(tiny, tmp_path, fmt):
    out = tmp_path / f"instr.{fmt}"
    proc = trnx("export", str(tiny), "--table", "instructions", "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    df = pq.read_table(out).to_pandas() if fmt == "parquet" else pd.read_csv(out)
    assert len(df) == 8 and list(df["opcode"][:2]) == ["MultiplyMoving", "MultiplyMoving"]
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


@pytest.mark.parametrize("args, message", [
    (["info", "/no/such.trnx"], "does not exist"),
    (["export", "{tiny}", "--format", "csv", "-o", "{tmp}/x.csv"], "name it with --table"),
    (["export", "{tiny}", "--table", "dma", "--format", "csv", "-o", "/no/such/dir/x.csv"], "does not exist"),
    (["export", "{tiny}", "--table", "nope", "--format", "csv", "-o", "{tmp}/x.csv"], "Invalid value for '--table'"),
    (["info"], "Missing argument 'TRACE'"),
    (["frobnicate"], "No such command 'frobnicate'"),
])
def test_bad_arguments_exit_2_without_traceback(tiny, tmp_path, args, message):
    proc = trnx(*[a.format(tiny=tiny, tmp=tmp_path) for a in args])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("fmt, out", [("chrome-json", "x.json"), ("perfetto", "x.perfetto-trace"),
                                      ("neuron-explorer", "x-profile")])
def test_table_with_a_whole_timeline_format_is_refused_not_ignored(tiny, tmp_path, fmt, out):
    """--table names the one table parquet and csv write; the timeline formats write every table, so
    --table kernels with them exported all 38,034 events of a sample instead of its kernels, silently."""
    from clirun import one_sentence
    from clirun import trnx as trnx_in_process

    code, _, err = trnx_in_process("export", tiny, "--table", "kernels", "--format", fmt, "-o", tmp_path / out)
    assert code == 2 and "--table" in one_sentence(err) and "--range" in err, err
    assert not (tmp_path / out).exists()


def test_presets_keep_their_columns_however_long_the_names():
    """Each list's descriptions start in one column: the hardware list's ran into the longer names
    ('trn3-ultraserver-gen1 8 cores' beside 'trn3     8 cores'), and so did 'reducescatter --shape'."""
    from clirun import trnx as trnx_in_process

    code, out, _ = trnx_in_process("presets")
    assert code == 0
    hw = [line for line in out.splitlines() if " cores, BF16 " in line]
    assert len(hw) >= 7 and len({line.index(" cores, BF16") - len(line.split()[1]) for line in hw}) == 1
    chips = [line for line in out.splitlines() if " chips, " in line and line.startswith("   ")]
    assert chips and {len(line) - len(line.lstrip()) for line in chips} == {hw[0].index(" cores, BF16") - 1}
    shapes = [line for line in out.splitlines() if "--shape " in line and not line.startswith("micro")]
    assert len({line.index("--shape") for line in shapes}) == 1
    import re

    assert len({re.search(r"--shape \S+ +", line).end() for line in shapes}) == 1  # and the help after the shape


def test_capture_names_a_detail_core_that_got_no_work(tmp_path):
    """A micro-benchmark runs on core 0: --cores 5 records engine rows for core 5 that stay empty,
    which the user hears of in one line (also with --quiet); a core that ran is not mentioned."""
    from clirun import trnx as trnx_in_process

    code, out, err = trnx_in_process("capture", "-w", "gemm", "--shape", "256,256,256", "--cores", "5", "-q",
                                     "-o", tmp_path / "g5.trnx")
    assert code == 0 and out == ""
    assert err == ("note: core 5 got no work (the workload ran on core 0; --compute-cores spreads it over more): "
                   "its instruction rows are empty.\n")
    code, out, err = trnx_in_process("capture", "-w", "gemm", "--shape", "256,256,256", "--cores", "0,5",
                                     "--compute-cores", "2", "-o", tmp_path / "g2.trnx")
    assert code == 0 and out.startswith("wrote ") and err == (
        "note: core 5 got no work (the workload ran on cores 0-1; --compute-cores spreads it over more): "
        "its instruction rows are empty.\n")
    code, out, err = trnx_in_process("capture", "-w", "gemm", "--shape", "256,256,256", "--cores", "0",
                                     "-o", tmp_path / "g0.trnx")
    assert code == 0 and err == ""


def test_capture_counts_what_it_wrote_in_words_that_agree(tmp_path):
    from clirun import trnx as trnx_in_process

    code, out, err = trnx_in_process("capture", "-w", "gemm", "--shape", "256,256,256", "-o", tmp_path / "g.trnx")
    assert code == 0, err
    assert ", 1 kernel, " in out and "1 kernels" not in out
