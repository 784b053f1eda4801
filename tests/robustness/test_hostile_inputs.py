"""Hostile inputs through the real CLI (issue 12, items 6, 7 and 11): each ends in exit 0 or in
exit 2 with one sentence that names the file and the need, never a traceback, an overflow or an
out-of-memory kill.

Presets and op-graphs go to `trnx capture`, meta.json to `trnx validate`/`info`/`summary`,
Kineto files to `trnx import`. Memory is bounded where it used to explode: a gzip bomb is
refused before it is inflated, an unterminated string no longer costs ~130x the file.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
import zlib
from pathlib import Path

import pytest

from clirun import one_sentence_error, trnx
from tracegen import write_tiny

PRESET = (Path(__file__).parents[2] / "simcore" / "hardware" / "presets" / "trn3.toml").read_text()
DEEP = 2000  # well past Python's recursion limit (1000)
LONG = "7" * 5000  # past Python's 4,300-digit limit for int()
EVENT = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100.0, "dur": 50.0,
         "args": {"device": 0, "stream": 7, "correlation": 1}}


def _preset(edit) -> str:
    text = edit(PRESET)
    assert text != PRESET
    return text


PRESETS = {
    "clock 1e-300": (_preset(lambda t: t.replace("clock_ghz = 2.4 ", "clock_ghz = 1e-300 ", 1)),
                     "'tensor.clock_ghz' must be between 0.001 and 1e+09 (got 1e-300)"),
    "hbm bandwidth 1e-300": (_preset(lambda t: t.replace("bandwidth_gbps = 4900 ", "bandwidth_gbps = 1e-300 ", 1)),
                             "'hbm.bandwidth_gbps' must be between 0.001 and 1e+09"),
    "SBUF of 1 KiB": (_preset(lambda t: t.replace("bytes_per_core = 33554432 ", "bytes_per_core = 1024 ", 1)),
                      "is too small for a 256x256x256 bf16 matmul: even its smallest blocking needs"),
    "cores_per_chip 2^62": (_preset(lambda t: t.replace("cores_per_chip = 8 ", f"cores_per_chip = {2**62} ", 1)),
                            "'cores_per_chip' must be at most 1,024"),
    "a 1x1 tensor array": (_preset(lambda t: t.replace("rows = 128 ", "rows = 1 ", 1).replace("cols = 128", "cols = 1", 1)),
                           "'tensor.cols' (1) must equal 'sbuf.partitions' (128)"),
    "arrays nested 2,000 deep": (PRESET + "\n[extra]\nx = " + "[" * DEEP + "]" * DEEP + "\n", "nests tables or arrays too deeply"),
    "a 5,000-digit integer": (_preset(lambda t: t.replace("chips = 1", f"chips = {LONG}", 1)), "holds an integer of more than 4,300 digits"),
}


@pytest.mark.parametrize("case", sorted(PRESETS))
def test_hostile_presets_are_refused_in_one_sentence(case: str, tmp_path: Path) -> None:
    text, expected = PRESETS[case]
    preset = tmp_path / "what-if.toml"
    preset.write_text(text)
    out = tmp_path / "t.trnx"
    said = one_sentence_error(trnx("capture", "-H", preset, "-w", "gemm", "--shape", "256,256,256", "-o", out))
    assert expected in said
    assert not out.exists()


OPGRAPHS = {
    "ops nested 2,000 deep": ('{"ops": ' + "[" * DEEP + "]" * DEEP + "}", "nests too deeply to be an op graph"),
    "a 5,000-digit repeat": ('{"repeat": ' + LONG + ', "ops": [{"kind": "matmul", "m": 4, "k": 4, "n": 4}]}',
                             "holds an integer of more than 4,300 digits"),
    # within MAX_OPS (10,000 ops), but ~123M instructions and ~8 GB if simulated: refused before any is
    "10,000 repeats of an 8192^3 matmul": (json.dumps({"repeat": 10_000, "ops": [{"kind": "matmul", "m": 8192, "k": 8192, "n": 8192}]}),
                                           "would schedule more than 50,000,000 instructions on one chip"),
}


@pytest.mark.parametrize("case", sorted(OPGRAPHS))
def test_hostile_op_graphs_are_refused_in_one_sentence(case: str, tmp_path: Path) -> None:
    text, expected = OPGRAPHS[case]
    graph = tmp_path / "g.json"
    graph.write_text(text)
    out = tmp_path / "t.trnx"
    t0 = time.perf_counter()
    said = one_sentence_error(trnx("capture", "-w", graph, "-o", out))
    assert expected in said and time.perf_counter() - t0 < 30
    assert not out.exists()


META = {
    "nested 2,000 deep": (lambda s: s[:-2] + ', "x": ' + "[" * DEEP + "]" * DEEP + "}", "nests JSON too deeply"),
    "a 5,000-digit integer": (lambda s: s[:-2] + f', "x": {LONG}' + "}", "holds an integer of more than 4,300 digits"),
}


@pytest.mark.parametrize("case", sorted(META))
@pytest.mark.parametrize("command", ["validate", "info", "summary"])
def test_hostile_meta_json_is_refused_in_one_sentence(case: str, command: str, tmp_path: Path) -> None:
    trace = write_tiny(tmp_path / "t.trnx")
    edit, expected = META[case]
    meta = (trace / "meta.json").read_text()
    (trace / "meta.json").write_text(edit(meta.rstrip()))
    assert expected in one_sentence_error(trnx(command, trace))


def _kineto(events: list, path: Path, raw: str | None = None) -> Path:
    path.write_text(raw if raw is not None else json.dumps({"traceEvents": events}))
    return path


def test_kineto_nested_2000_deep_and_long_integers_are_one_sentence(tmp_path: Path) -> None:
    ev = json.dumps(EVENT)
    deep = _kineto([], tmp_path / "deep.json", '{"traceEvents": [' + ev + ", " + "[" * DEEP + "]" * DEEP + "]}")
    assert "nests JSON too deeply" in one_sentence_error(trnx("import", deep, "-o", tmp_path / "a.trnx"))
    assert not (tmp_path / "a.trnx").exists()
    # a 5,000-digit timestamp: refused as such, or its event skipped as absurd (which leaves none)
    long = _kineto([], tmp_path / "long.json", '{"traceEvents": [' + ev.replace('"ts": 100.0', f'"ts": {LONG}') + "]}")
    said = one_sentence_error(trnx("import", long, "-o", tmp_path / "b.trnx"))
    assert "holds an integer of more than 4,300 digits" in said or "holds no GPU kernel, copy or CPU op event" in said
    assert not (tmp_path / "b.trnx").exists()
    # one beside a good event, in an arg the importer does not read: imported, or one sentence
    other = _kineto([], tmp_path / "other.json", '{"traceEvents": [' + ev + ", " + ev.replace('"stream": 7', f'"stream": 7, "x": {LONG}') + "]}")
    res = trnx("import", other, "-o", tmp_path / "c.trnx")
    assert res.code == 0 or "holds an integer of more than 4,300 digits" in one_sentence_error(res)


def test_a_lone_surrogate_in_a_kineto_name_imports_as_a_replacement_character(tmp_path: Path) -> None:
    ev = json.dumps(EVENT).replace('"name": "gemm"', '"name": "gemm\\ud800"')
    f = _kineto([], tmp_path / "s.json", '{"traceEvents": [' + ev + "]}")
    res = trnx("import", f, "-o", tmp_path / "s.trnx")
    assert res.code == 0, res.err
    from simcore.trace import open_trace

    assert open_trace(tmp_path / "s.trnx").to_pandas("kernels")["name"].tolist() == ["gemm\ufffd"]


def _bomb(path: Path, inflated_mib: int) -> Path:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    path.write_bytes(b"".join([*(c.compress(block) for _ in range(inflated_mib)), c.flush()]))
    return path


def test_a_gzip_bomb_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    """1 GiB of spaces in a 1 MB gzip: refused at 64 MiB (64x its size, at least 64 MiB)."""
    bomb = _bomb(tmp_path / "bomb.json.gz", 1024)
    assert bomb.stat().st_size < 1_100_000
    from explorer.interop.kineto.reader import gzip_limit

    assert gzip_limit(bomb.stat().st_size) == 64 << 20
    t0 = time.perf_counter()
    said = one_sentence_error(trnx("import", bomb, "-o", tmp_path / "b.trnx"))
    assert "inflates to more than 64 MiB" in said and "gzip bomb" in said and "gunzip it" in said
    assert time.perf_counter() - t0 < 20 and not (tmp_path / "b.trnx").exists()


def test_a_damaged_json_gz_keeps_every_complete_event_before_the_damage(tmp_path: Path) -> None:
    events = [dict(EVENT, ts=100.0 * i, name=f"k{i}", args=dict(EVENT["args"], correlation=i)) for i in range(400)]
    text = json.dumps({"traceEvents": events}, indent=1).encode()
    gz = bytearray(gzip.compress(text))
    gz[len(gz) // 2] ^= 0xFF  # one byte damaged in the middle of the deflate stream
    f = tmp_path / "rank0.json.gz"
    f.write_bytes(bytes(gz))
    res = trnx("import", f, "-o", tmp_path / "d.trnx")
    assert res.code == 0, res.err
    assert "gzip stream damaged" in res.err + res.out
    from simcore.trace import open_trace

    names = open_trace(tmp_path / "d.trnx").to_pandas("kernels").sort_values("start_ns")["name"].tolist()
    assert 10 < len(names) < 400 and names == [f"k{i}" for i in range(len(names))]


@pytest.mark.timeout(120)
def test_an_unterminated_kineto_string_costs_memory_in_proportion_to_the_file(tmp_path: Path) -> None:
    """A file ending in a 4 MB unterminated string: the salvage keeps the complete events in
    bounded memory (the old trailing-comma regex kept state per character, ~130x the file)."""
    import subprocess

    events = [dict(EVENT, ts=100.0 * i, name=f"k{i}") for i in range(50)]
    text = json.dumps({"traceEvents": events})[:-2] + ', {"ph": "X", "name": "' + "x" * (4 << 20)
    f = tmp_path / "cut.json"
    f.write_text(text)
    code = (
        "import resource, sys\n"
        "from explorer.interop.kineto.reader import load_kineto\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"kf = load_kineto({str(f)!r})\n"
        "print(len(kf.events), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert out.returncode == 0, out.stderr
    kept, grew_kib = map(int, out.stdout.split())
    assert kept == 50
    assert grew_kib * 1024 < 20 * f.stat().st_size, f"salvage grew {grew_kib} KiB for a {f.stat().st_size}-byte file"
