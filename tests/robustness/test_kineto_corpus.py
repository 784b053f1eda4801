"""A corpus of malformed Kineto (PyTorch profiler) files: each imports or fails in one sentence.

`VALID` cases must import (damage is repaired or bad events skipped); `INVALID` cases
must be refused with one sentence. Either way: no traceback, no hang, nothing half-written.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from robustness.contract import import_or_one_sentence
from interop.kineto_samples import NCCL, rank_doc

GOOD = json.dumps(rank_doc(0)).encode()


def _doc(events: list, **extra) -> bytes:
    return json.dumps({"traceEvents": events, **extra}).encode()


def _k(**over) -> dict:
    ev = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100.0, "dur": 5.0,
          "args": {"device": 0, "stream": 7}}
    ev.update(over)
    return ev


def _nccl(args: dict) -> dict:
    return _k(name=NCCL, tid=20, args={"device": 0, "stream": 20, **args})


# name -> (file bytes, expect a valid trace?)
CORPUS: dict[str, tuple[bytes, bool]] = {
    "empty": (b"", False),
    "whitespace": (b"  \n\t ", False),
    "null": (b"null", False),
    "number": (b"42", False),
    "string": (b'"traceEvents"', False),
    "empty-object": (b"{}", False),
    "events-not-a-list": (b'{"traceEvents": 5}', False),
    "no-events": (b'{"traceEvents": []}', False),
    "bare-empty-array": (b"[]", False),
    "events-not-objects": (b"[1, 2, [3], null, \"x\"]", False),
    "only-metadata": (_doc([{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]), False),
    "only-python-functions": (_doc([_k(cat="python_function")]), False),
    "binary-garbage": (bytes(range(256)) * 4, False),
    "gzip-magic-only": (b"\x1f\x8b", False),
    "gzip-of-garbage-header": (b"\x1f\x8b\x08\x00" + b"\xff" * 64, False),
    "deep-nesting": (b"[" * 100_000 + b"]" * 100_000, False),
    "deep-nesting-unclosed": (b'{"traceEvents": ' + b"[" * 50_000, False),
    "truncated-before-events": (GOOD[: GOOD.index(b"traceEvents") + 5], False),
    "bare-array": (json.dumps(rank_doc(0)["traceEvents"]).encode(), True),
    "bom": (b"\xef\xbb\xbf" + GOOD, True),
    "utf16-file": (json.dumps(rank_doc(0)).encode("utf-16"), True),
    "truncated-mid-event": (GOOD[: int(len(GOOD) * 0.8)], True),
    "truncated-mid-string": (GOOD[: GOOD.rindex(b"sm90_xmma") + 4], True),
    "truncated-after-comma": (GOOD[: GOOD.rindex(b"}, {") + 3], True),
    "trailing-comma-array": (_doc([_k(), _k(ts=200.0)]).replace(b"}]", b"},]"), True),
    "trailing-comma-object": (_doc([_k()]).replace(b'"stream": 7}', b'"stream": 7,}'), True),
    "trailing-garbage": (GOOD + b"\n\x00\x00garbage", True),
    "gzip": (gzip.compress(GOOD), True),
    "gzip-truncated": (gzip.compress(GOOD)[: int(len(gzip.compress(GOOD)) * 0.9)], True),
    "control-chars-in-name": (_doc([_k(name="gemm\x01\x02\x1b[31m")]).replace(b"\\u0001", b"\x01").replace(b"\\u0002", b"\x02").replace(b"\\u001b", b"\x1b"), True),
    "invalid-utf8-in-name": (_doc([_k(name="gemmXX")]).replace(b"XX", b"\xff\xfe"), True),
    "nan-timestamp": (_doc([_k(), _k(ts=1.0)]).replace(b'"ts": 1.0', b'"ts": NaN'), True),
    "infinite-timestamp": (_doc([_k(), _k(ts=1.0)]).replace(b'"ts": 1.0', b'"ts": Infinity'), True),
    "overflowing-timestamp": (_doc([_k(), _k(ts=1.0)]).replace(b'"ts": 1.0', b'"ts": 1e999'), True),
    "huge-timestamp": (_doc([_k(), _k(ts=1e300)]), True),
    "huge-duration": (_doc([_k(), _k(dur=1e20)]), True),
    "negative-duration": (_doc([_k(), _k(dur=-5.0)]), True),
    "string-timestamps": (_doc([_k(ts="100.5", dur="2")]), True),
    "non-numeric-timestamp": (_doc([_k(), _k(ts="yesterday")]), True),
    "missing-timestamp": (_doc([_k(), {k: v for k, v in _k().items() if k != "ts"}]), True),
    "missing-duration": (_doc([_k(), {k: v for k, v in _k().items() if k != "dur"}]), True),
    "boolean-timestamp": (_doc([_k(), _k(ts=True)]), True),
    "string-pids-tids": (_doc([_k(pid="rank 0 [gpu]", tid="stream 7 (compute)", args={})]), True),
    "object-pid-list-tid": (_doc([_k(pid={"a": 1}, tid=[1, 2], args={})]), True),
    "ids-beyond-int64": (_doc([_k(args={"device": 0, "stream": 7, "External id": 2**70, "correlation": -(2**80)})]), True),
    "args-not-object": (_doc([_k(args=[1, 2, 3])]), True),
    "name-not-string": (_doc([_k(name=None), _k(name=12, ts=200.0), _k(name={"x": 1}, ts=300.0)]), True),
    "missing-ph-and-cat": (_doc([_k(), {"name": "x", "ts": 1, "dur": 1}, {"ph": "X", "name": "y", "ts": 1, "dur": 1}]), True),
    "duplicate-keys": (b'{"traceEvents": [], "traceEvents": [' + json.dumps(_k()).encode() + b"]}", True),
    "garbage-collective-args": (_doc([_nccl({"Group size": "abc", "Process Group Ranks": "[a, b]", "In msg nelems": -5,
                                              "Out msg nelems": 1e30, "dtype": ["x"], "Collective name": None})]), True),
    "huge-group-size": (_doc([_nccl({"Group size": 10**30, "In msg nelems": 10**30, "dtype": "Float"})]), True),
    "huge-rank-list": (_doc([_nccl({"Process Group Ranks": "[" + ", ".join(map(str, range(200_000))) + "]"})]), True),
    "collective-name-control-chars": (_doc([_nccl({"Collective name": "all\u0000reduce"})]), True),
    "bad-distributed-info": (_doc([_k()], distributedInfo={"rank": "x", "world_size": "many"}), True),
    "negative-rank": (_doc([_k()], distributedInfo={"rank": -3}), True),
    "bad-device-properties": (_doc([_k()], deviceProperties={"name": 5}), True),
    "overlapping-cpu-ops": (_doc([_k(cat="cpu_op", name="a", ts=0.0, dur=10.0, tid=1), _k(cat="cpu_op", name="b", ts=5.0, dur=10.0, tid=1),
                                 _k(cat="user_annotation", name="ProfilerStep#x", ts=0.0, dur=1.0, tid=1)]), True),
    "zero-length-everything": (_doc([_k(dur=0.0), _k(cat="cpu_op", dur=0.0), _k(cat="gpu_memcpy", name="Memcpy DtoH", dur=0.0)]), True),
    "extreme-time-spread": (_doc([_k(ts=-3.9e15), _k(ts=3.9e15)]), False),  # 247 years: more than a trace holds
    "wide-but-valid-time-spread": (_doc([_k(ts=-1.1e15), _k(ts=1.1e15)]), True),  # 70 years
}


def test_the_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_imports_or_fails_in_one_sentence(name: str, tmp_path: Path) -> None:
    data, valid = CORPUS[name]
    src = tmp_path / (f"{name}.json.gz" if data.startswith(b"\x1f\x8b") else f"{name}.json")
    src.write_bytes(data)
    assert import_or_one_sentence([src], tmp_path / "out.trnx") is valid


def test_corpus_through_the_cli_exits_0_or_2(tmp_path: Path) -> None:
    """One process over a few nasty files: exit codes and one stderr line, never a traceback."""
    for name in ("empty", "binary-garbage", "deep-nesting", "truncated-mid-event", "ids-beyond-int64"):
        data, valid = CORPUS[name]
        src = tmp_path / f"{name}.json"
        src.write_bytes(data)
        r = subprocess.run([sys.executable, "-m", "explorer.cli.main", "import", str(src), "-o", str(tmp_path / f"{name}.trnx")],
                           capture_output=True, text=True, timeout=120)
        assert "Traceback" not in r.stderr, name
        if valid:
            assert r.returncode == 0, (name, r.stderr)
        else:
            assert r.returncode == 2 and r.stderr.startswith("trnx: error: ") and len(r.stderr.strip().splitlines()) == 1, name
