"""Integrity (issue 12, item 9): every table file's checksum is recorded in meta.json when the trace
is written (format 1.3; SHA-256 until 1.4, BLAKE3 from 1.5) and verified before the file is first
read, by `trnx validate` and every other command; a trace from before 1.3 (no checksums) still
opens, and one of 1.3 or 1.4 verifies its SHA-256 as before.

The fuzz test flips single bits across every table file of small traces: each run must be
detected (exit 2, one sentence) or give output identical to the clean trace's."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from simcore.errors import TraceFormatError
from simcore.trace import open_trace
from simcore.trace import schema as S
from tracegen import write_tiny


def flip(file: Path, bit: int) -> None:
    data = bytearray(file.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    file.write_bytes(bytes(data))


def damaged_sentence(file: Path) -> str:
    return (f"trnx: error: {file} is damaged: its bytes do not match the checksum meta.json recorded when it "
            "was written (restore it from a copy, or capture again).")


def test_validate_verifies_every_table_file(trnx, tmp_path):
    t = write_tiny(tmp_path / "t.trnx")
    meta = json.loads((t / "meta.json").read_text())
    assert meta["version"] == "1.5"  # (1.3 added the checksums, 1.5 made them BLAKE3)
    assert all(e["checksum"].startswith("blake3-64MiB:") for e in meta["tables"].values())
    code, out, err = trnx("validate", t)
    assert code == 0 and out.strip().endswith("9 tables, 23 rows; every table file matches its checksum."), out + err


@pytest.mark.parametrize("command", [["validate"], ["summary", "--json"], ["info"],
                                    ["export", "--table", "dma", "--format", "csv", "-o", "{out}"]])
def test_one_flipped_bit_is_one_sentence_everywhere(trnx, tmp_path, command):
    t = write_tiny(tmp_path / "t.trnx")
    flip(t / "dma.arrow", 8 * 200 + 3)
    args = [a.replace("{out}", str(tmp_path / "x.csv")) for a in command]
    code, out, err = trnx(args[0], t, *args[1:])
    if command == ["info"]:   # meta.json only: info reads no table
        assert code == 0
        return
    assert code == 2 and err.strip() == damaged_sentence(t / "dma.arrow")
    assert not (tmp_path / "x.csv").exists()


def test_a_file_is_verified_when_first_read_not_before(tmp_path):
    t = write_tiny(tmp_path / "t.trnx")
    flip(t / "instructions.arrow", 8 * 300)
    trace = open_trace(t, validate=False)
    assert trace.tracks.num_rows == 5           # another table: opens and reads as before
    with pytest.raises(TraceFormatError, match="instructions.arrow is damaged"):
        trace.instructions
    assert open_trace(t, validate=False, checksums=False).instructions.num_rows == 8  # asked not to


def test_a_trace_without_checksums_still_opens(trnx, tmp_path):
    t = write_tiny(tmp_path / "old.trnx")
    meta = json.loads((t / "meta.json").read_text())
    meta["version"] = "1.1"
    for entry in meta["tables"].values():
        entry.pop("checksum")
    (t / "meta.json").write_text(json.dumps(meta))
    code, out, _ = trnx("validate", t)
    assert code == 0 and "no checksums recorded (written before format 1.3)" in out
    assert trnx("summary", "--json", t)[0] == 0


def test_a_malformed_checksum_is_one_sentence(trnx, tmp_path):
    t = write_tiny(tmp_path / "t.trnx")
    meta = json.loads((t / "meta.json").read_text())
    meta["tables"]["flows"]["checksum"] = "sha256-64MiB:not hex"
    (t / "meta.json").write_text(json.dumps(meta))
    code, _, err = trnx("validate", t)
    assert code == 2 and "table 'flows' has a malformed checksum ('sha256-64MiB:not hex')." in err


def test_partitions_each_carry_a_checksum(trnx, tmp_path):
    from simcore.trace import TraceWriter
    from tracegen import tiny_tables

    t = tmp_path / "p.trnx"
    with TraceWriter(t) as w:
        for name, data in tiny_tables().items():
            w.write(name, data, chip=0) if name == "instructions" else w.write(name, data)
    part = json.loads((t / "meta.json").read_text())["tables"]["instructions"]["partitions"][0]
    assert part["checksum"].startswith("blake3-64MiB:")
    flip(t / part["file"], 8 * 100)
    code, _, err = trnx("validate", t)
    assert code == 2 and err.strip() == damaged_sentence(t / part["file"])


def test_a_checksum_of_another_algorithm_is_left_unchecked(trnx, tmp_path):
    """A later minor version may use another algorithm: this reader opens the trace, unchecked."""
    t = write_tiny(tmp_path / "t.trnx")
    meta = json.loads((t / "meta.json").read_text())
    for entry in meta["tables"].values():
        entry["checksum"] = "sha3_256-1GiB:" + "0" * 64
    (t / "meta.json").write_text(json.dumps(meta))
    code, out, _ = trnx("validate", t)
    assert code == 0 and "no checksums recorded" in out


@pytest.mark.parametrize("algorithm, version", [("blake3-64MiB", None), ("sha256-64MiB", "1.4")])
def test_the_checksum_is_a_hash_list_of_blocks_each_verified_on_its_own_thread(trnx, tmp_path, monkeypatch,
                                                                               algorithm, version):
    """The hash over the hashes of consecutive blocks (64 MiB; 4 KiB here so a small trace has
    many), computed here independently of the writer, and one flipped bit in any block found: BLAKE3
    as written now, and SHA-256 as 1.3 and 1.4 wrote it (such a trace verifies bit for bit)."""
    import hashlib

    from blake3 import blake3

    from simcore.trace import checksum
    from tracegen import tiny_tables

    monkeypatch.setattr(checksum, "BLOCK", 4096)
    from simcore.trace import write_trace

    t = write_trace(tmp_path / "t.trnx", tiny_tables(n_per_track=2000), checksum_algorithm=algorithm)
    if version is not None:  # as the older writer left it
        meta = json.loads((t / "meta.json").read_text())
        (t / "meta.json").write_text(json.dumps({**meta, "version": version}))
    f = t / "instructions.arrow"
    data = f.read_bytes()
    assert len(data) > 10 * 4096
    h = {"blake3-64MiB": blake3, "sha256-64MiB": hashlib.sha256}[algorithm]
    blocks = [h(data[i:i + 4096]).digest() for i in range(0, len(data), 4096)]
    meta = json.loads((t / "meta.json").read_text())
    assert meta["tables"]["instructions"]["checksum"] == f"{algorithm}:" + h(b"".join(blocks)).hexdigest()
    assert all(e["checksum"].startswith(algorithm + ":") for e in meta["tables"].values())
    assert open_trace(t).verify_checksums(workers=4) == 0   # (validated at open: all verified already)
    code, out, _ = trnx("validate", t)
    assert code == 0 and out.strip().endswith("every table file matches its checksum.")
    flip(f, 8 * (len(data) - 5000))                           # in the next-to-last block
    with pytest.raises(TraceFormatError, match="instructions.arrow is damaged"):
        open_trace(t, validate=False, checksums=False).verify_checksums(workers=4)
    code, _, err = trnx("validate", t)
    assert code == 2 and err.strip() == damaged_sentence(f)


def test_an_unknown_checksum_algorithm_is_refused_before_anything_is_written(tmp_path):
    from simcore.errors import UserError
    from simcore.trace import TraceWriter

    with pytest.raises(UserError, match="unknown checksum algorithm 'md5'; choose sha256-64MiB or blake3-64MiB."):
        TraceWriter(tmp_path / "t.trnx", checksum_algorithm="md5")
    assert list(tmp_path.iterdir()) == []


def test_a_write_hashed_block_by_block_leaves_no_file_open_committed_or_aborted(tmp_path, monkeypatch):
    """The writer hashes each block on other threads as it is written: a committed trace records
    the same checksums a reader computes, and an aborted one (a capture cancelled mid-write) leaves
    no directory, no open file and no hashing thread behind."""
    import os
    import threading

    from simcore.trace import checksum
    from simcore.trace.writer import TraceWriter
    from tracegen import tiny_tables

    monkeypatch.setattr(checksum, "BLOCK", 4096)
    fds = set(os.listdir("/proc/self/fd"))
    tables = tiny_tables(n_per_track=2000)
    with TraceWriter(tmp_path / "done.trnx") as w:
        for name, rows in tables.items():
            w.write(name, rows)
    meta = json.loads((tmp_path / "done.trnx" / "meta.json").read_text())
    assert meta["tables"]["instructions"]["checksum"] == checksum.file_checksum(tmp_path / "done.trnx" / "instructions.arrow")
    w = TraceWriter(tmp_path / "cancelled.trnx")
    for _ in range(20):
        w.write("instructions", tables["instructions"])
    w.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done.trnx"]
    assert set(os.listdir("/proc/self/fd")) <= fds
    assert not [t for t in threading.enumerate() if t.name.startswith("trace-hash")]


def test_a_table_file_that_cannot_start_leaves_nothing_open(tmp_path, monkeypatch):
    """A disk that fills as a table file starts (its schema cannot be written): the write fails
    with that error and nothing of the trace stays open or on disk."""
    import os

    from simcore.trace import writer as W
    from tracegen import tiny_tables

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    fds = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(W.ipc, "new_file", full)
    with pytest.raises(OSError, match="No space left"):
        with W.TraceWriter(tmp_path / "t.trnx") as w:
            w.write("instructions", tiny_tables()["instructions"])
    assert list(tmp_path.iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) <= fds


def _bit_flip_runs(trnx, tmp_path: Path, clean: Path, flips_per_file: int, seed: int) -> tuple[int, int]:
    """Flip one bit at a time in every table file of `clean`; each `trnx summary --json` is
    detected (exit 2 and one sentence) or identical to the clean trace's. Returns (runs, detected)."""
    code, want, err = trnx("summary", "--json", "--no-recommendations", clean)
    assert code == 0, err
    rng = random.Random(seed)
    runs = detected = 0
    for rel in [p.relative_to(clean) for p in sorted(clean.rglob("*.arrow"))]:
        size = (clean / rel).stat().st_size
        for bit in sorted(rng.sample(range(size * 8), min(flips_per_file, size * 8))):
            t = tmp_path / "flipped.trnx"
            shutil.rmtree(t, ignore_errors=True)
            shutil.copytree(clean, t)
            flip(t / rel, bit)
            code, out, err = trnx("summary", "--json", "--no-recommendations", t)
            runs += 1
            if code == 2:
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("trnx: error: ") and "Traceback" not in err, err
                detected += 1
            else:
                assert code == 0 and out == want.replace(str(clean), str(t)), f"{rel} bit {bit}: {err}"
            vcode, _, verr = trnx("validate", t)
            assert vcode == 2 and f"{t / rel} is " in verr, f"{rel} bit {bit} passed validate"  # (or its magic)
    return runs, detected


def test_bit_flips_in_every_table_file_are_detected_or_harmless(trnx, tmp_path):
    tiny = write_tiny(tmp_path / "tiny.trnx")
    runs, detected = _bit_flip_runs(trnx, tmp_path, tiny, flips_per_file=12, seed=12)
    assert runs == 12 * len(S.TABLES) and detected == runs


def test_bit_flips_in_a_captured_trace(trnx, tmp_path):
    import simcore

    cap = simcore.capture(workload="rmsnorm", shape="128,512", detail="instruction", out_path=tmp_path / "c.trnx")
    runs, detected = _bit_flip_runs(trnx, tmp_path, cap, flips_per_file=6, seed=9)
    assert runs == 6 * len(S.TABLES) and detected == runs
