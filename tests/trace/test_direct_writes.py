"""Table files are written around the page cache (O_DIRECT) where the filesystem allows it, and
through it where it does not: either way the files are byte for byte the same, their checksums
verify, and a failed write leaves nothing."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import simcore
from simcore.trace import checksum, diskwrite, open_trace

OPTIONS = dict(workload="llama3.1-8b", phase="prefill", seq=512, layers=1, detail="instruction")


def _tables(trace: Path) -> dict[str, bytes]:
    """Every file of the trace but the timeline's index (whose stamp holds the files' inodes and times)."""
    return {str(p.relative_to(trace)): p.read_bytes() for p in sorted(trace.rglob("*"))
            if p.is_file() and p.name != "timeline-index.cache"}


@pytest.fixture
def small_chunks(monkeypatch):
    """Blocks of 24 KiB written in chunks of 8 KiB, two in flight: a small capture crosses many of
    each, and its files end anywhere in a chunk or block."""
    monkeypatch.setattr(checksum, "BLOCK", 24 << 10)
    monkeypatch.setattr(diskwrite.DirectIO, "CHUNK", 8 << 10)
    monkeypatch.setattr(diskwrite.DirectIO, "IN_FLIGHT", 2)


def _direct_files(monkeypatch) -> list:
    """The DirectFiles a capture makes (recorded)."""
    made: list = []
    real = diskwrite.DirectFile.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(diskwrite.DirectFile, "__init__", init)
    return made


def _supports_direct(directory: Path) -> bool:
    try:
        fd = os.open(directory / ".probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
    except OSError:
        return False
    os.close(fd)
    os.unlink(directory / ".probe")
    return True


def test_direct_writes_give_the_bytes_the_page_cache_gives(tmp_path, monkeypatch, small_chunks):
    if not _supports_direct(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    made = _direct_files(monkeypatch)
    direct = simcore.capture(out_path=tmp_path / "direct.trnx", **OPTIONS)
    sizes = [os.path.getsize(p) for p in direct.rglob("*.arrow")]
    assert len(made) == len(sizes) and max(sizes) > 10 * checksum.BLOCK  # (every table file written around the cache)
    assert any(s % 4096 for s in sizes)  # (tails that are not whole pages, padded then cut)
    monkeypatch.setattr(diskwrite, "DIRECT", False)
    cached = simcore.capture(out_path=tmp_path / "cached.trnx", **OPTIONS)
    assert len(made) == len(sizes)  # (none more)
    a, b = _tables(direct), _tables(cached)
    assert a.keys() == b.keys() and "meta.json" in a
    assert all(a[k] == b[k] for k in a), [k for k in a if a[k] != b[k]]  # meta.json: the same checksums
    assert open_trace(direct).verify_checksums(workers=2) == 0


def test_a_filesystem_refusing_o_direct_gets_the_same_bytes_through_the_page_cache(tmp_path, monkeypatch,
                                                                                    small_chunks):
    """Where opening with O_DIRECT fails with EINVAL (tmpfs), the writer falls back, file by file."""
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args, **kwargs)

    made = _direct_files(monkeypatch)
    direct = simcore.capture(out_path=tmp_path / "direct.trnx", **OPTIONS)
    supported = _supports_direct(tmp_path)
    monkeypatch.setattr(diskwrite.os, "open", refusing)
    refused = simcore.capture(out_path=tmp_path / "refused.trnx", **OPTIONS)
    a, b = _tables(direct), _tables(refused)
    assert a == b
    assert open_trace(refused).verify_checksums(workers=2) == 0
    assert len(made) == (len(list(direct.rglob("*.arrow"))) if supported else 0)  # (none for `refused`)


def test_a_filesystem_refusing_the_direct_writes_gets_them_through_the_page_cache(tmp_path, monkeypatch,
                                                                                  small_chunks):
    """A filesystem may open a file with O_DIRECT and then refuse the writes (EINVAL): they go through
    the page cache, with the same bytes."""
    if not _supports_direct(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    import fcntl

    real = os.pwrite
    refused: list[int] = []

    def pwrite(fd, data, offset):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, offset)

    monkeypatch.setattr(diskwrite.os, "pwrite", pwrite)
    t = simcore.capture(out_path=tmp_path / "t.trnx", **OPTIONS)
    monkeypatch.setattr(diskwrite.os, "pwrite", real)
    monkeypatch.setattr(diskwrite, "DIRECT", False)
    cached = simcore.capture(out_path=tmp_path / "cached.trnx", **OPTIONS)
    assert refused and _tables(t) == _tables(cached)


def test_a_direct_write_failing_on_its_thread_makes_trnx_capture_say_one_sentence_and_leave_nothing(
        tmp_path, monkeypatch, trnx, small_chunks):
    """A full disk met by the thread writing the chunks: `trnx capture` exits 2 with one sentence naming
    the trace, and neither the trace nor its temporary is left."""
    from clirun import one_sentence_error

    if not _supports_direct(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    calls = {"n": 0}
    real = diskwrite._pwrite_all

    def full(fd, view, offset):
        calls["n"] += 1
        if calls["n"] > 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, view, offset)

    monkeypatch.setattr(diskwrite, "_pwrite_all", full)
    out = tmp_path / "full.trnx"
    sentence = one_sentence_error(trnx("capture", "-q", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512",
                                       "--layers", "1", "--detail", "instruction", "-o", out))
    assert "No space left on device" in sentence and "full.trnx" in sentence, sentence
    assert list(tmp_path.iterdir()) == []
