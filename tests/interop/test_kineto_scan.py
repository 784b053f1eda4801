"""The compiled byte scanner reads exactly what the parsers read, and refuses what it cannot.

The scanner is the importer's first reader; the msgspec/orjson/json paths are its
fallback. So: the same files give the same trace whichever reader ran (checked on
random well-formed documents too), its floats are the ones Python's float() gives,
it refuses damage instead of guessing, and no byte sequence makes it read out of bounds.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interop.kineto_samples import NCCL, COMM_ARGS, rank_doc, write_ranks
from robustness.contract import import_or_one_sentence
from robustness.test_kineto_corpus import CORPUS
from robustness.mutations import MUTATION, mutate
from simcore.errors import UserError
from simcore.trace import open_trace
from explorer.interop import import_kineto
from explorer.interop.kineto import importer as KI
from explorer.interop.kineto import reader as KJ
from explorer.interop.kineto import scan as S
from explorer.interop.kineto.scanned import CATEGORIES, read_scanned

TABLES = ("tracks", "kernels", "instructions", "dma", "collectives", "ops", "counters")
pytestmark = pytest.mark.skipif(not S.HAVE_NUMBA, reason="the scanner needs numba")


def _same_traces(a: Path, b: Path) -> None:
    ta, tb = open_trace(a), open_trace(b)
    for name in TABLES:
        assert ta.to_pandas(name).equals(tb.to_pandas(name)), name
    assert ta.meta["import"]["skipped_events"] == tb.meta["import"]["skipped_events"]
    assert ta.meta["capture"]["hta_excluded"] == tb.meta["capture"]["hta_excluded"]  # HTA's selection (kineto.hta)


@pytest.fixture(autouse=True)
def scanner_for_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """import_kineto uses the scanner from SCAN_MIN_BYTES on; these files are small."""
    monkeypatch.setattr(KI, "SCAN_MIN_BYTES", 0)


def _import_without_scanner(paths: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch, *, dicts: bool = False) -> None:
    with monkeypatch.context() as m:
        m.setattr(KI, "read_scanned", lambda data, include_python: None)
        if dicts:  # also refuse msgspec's typed decode: orjson -> plain dicts
            m.setattr(KJ, "decode", lambda data: None)
        import_kineto(paths, out)


def test_well_formed_files_take_the_scanner(tmp_path: Path) -> None:
    for p in write_ranks(tmp_path):
        ev, header = read_scanned(p.read_bytes(), False)
        assert header["distributedInfo"]["world_size"] == 2
        assert ev.total == len(json.loads(p.read_bytes())["traceEvents"])
        assert len(ev.kernels) == 3 and len(ev.cpu_ops) == 4  # python_function and cuda_runtime left out
    bare = json.dumps(rank_doc(0)["traceEvents"], indent=1).encode()  # a bare, pretty-printed array
    assert read_scanned(bare, False) is not None


def _old_pytorch_ranks(folder: Path) -> list[Path]:
    """Kernels without collective args: those are on the record_param_comms op only."""
    paths = []
    for r in (0, 1):
        doc = rank_doc(r)
        for ev in doc["traceEvents"]:
            if ev["name"] == NCCL:
                ev["args"] = {"device": 0, "stream": 20, "External id": 12}
        p = folder / f"rank{r}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths


@pytest.mark.parametrize("files", [write_ranks, _old_pytorch_ranks], ids=["pytorch-2.2+", "older-pytorch"])
def test_every_reader_gives_the_same_trace(files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = files(tmp_path)
    used = []
    with monkeypatch.context() as m:
        m.setattr(KI, "read_scanned", lambda data, py: used.append(1) or read_scanned(data, py))
        import_kineto(paths, tmp_path / "scan.trnx")
    assert used == [1, 1]  # both files went through the scanner
    _import_without_scanner(paths, tmp_path / "typed.trnx", monkeypatch)
    _import_without_scanner(paths, tmp_path / "dicts.trnx", monkeypatch, dicts=True)
    _same_traces(tmp_path / "scan.trnx", tmp_path / "typed.trnx")
    _same_traces(tmp_path / "scan.trnx", tmp_path / "dicts.trnx")
    c = open_trace(tmp_path / "scan.trnx").to_pandas("collectives")
    assert list(c["bytes"]) == [2 * 1048576] * 2 and set(c["kind"]) == {"all_reduce"}


def test_python_functions_on_request_through_the_scanner() -> None:
    data = json.dumps(rank_doc(0)).encode()
    without, _ = read_scanned(data, False)
    with_py, _ = read_scanned(data, True)
    assert len(with_py.cpu_ops) == len(without.cpu_ops) + 1
    assert "torch/nn/modules/module.py(1501): _call_impl" in with_py.names


def test_a_small_import_does_not_load_the_scanner(tmp_path: Path) -> None:
    """Loading numba and the compiled scanner costs a process ~0.25 s: below SCAN_MIN_BYTES
    a fresh process (the CLI) reads with msgspec and never imports numba."""
    paths = write_ranks(tmp_path)
    code = ("import sys; from explorer.interop import import_kineto; "
            f"import_kineto({[str(p) for p in paths]!r}, {str(tmp_path / 'out.trnx')!r}); "
            "print('numba' in sys.modules, 'explorer.interop.kineto.scanned' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
    open_trace(tmp_path / "out.trnx")


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_robustness_corpus_through_the_scanner(name: str, tmp_path: Path) -> None:
    """Every damaged file of tests/robustness meets the same contract with the scanner first."""
    data, valid = CORPUS[name]
    src = tmp_path / (f"{name}.json.gz" if data.startswith(b"\x1f\x8b") else f"{name}.json")
    src.write_bytes(data)
    assert import_or_one_sentence([src], tmp_path / "out.trnx") is valid


# -- numbers ---------------------------------------------------------------------------
_DECIMAL = st.from_regex(r"\A-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,14})?([eE][+-]?[0-9]{1,3})?\Z")


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_DECIMAL | st.floats(allow_nan=False, allow_infinity=False).map(repr), min_size=1, max_size=20))
def test_times_are_exactly_what_float_reads(texts: list[str]) -> None:
    """Clinger's fast path where it is exact, Python's float() for the rest: bit for bit."""
    events = ",".join(f'{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{t},"dur":{t}}}' for t in texts)
    data = f'{{"traceEvents":[{events}]}}'.encode()
    found = S.scan(data, [True] * len(CATEGORIES))
    assert found is not None
    ints, floats, _, total = found
    assert total == len(texts)
    for r, t in enumerate(texts):  # the fast path's value, or NaN and the span for float()
        want = float(t)
        for col, slow in ((S.TS, S.SLOW_TS), (S.DUR, S.SLOW_DUR)):
            if np.isnan(floats[r, col]):
                assert ints[r, slow] >= 0 and data[ints[r, slow]:].startswith(t.encode())
            else:
                assert floats[r, col] == want and np.signbit(floats[r, col]) == np.signbit(want), t
    ev, _ = read_scanned(data, False)
    kept = [float(t) for t in texts if 0 <= float(t) < 1e15 and abs(float(t)) < 4e15]
    assert ev.kernels.ts.tolist() == kept


# -- random well-formed documents: the scanner agrees with msgspec -------------------------
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_ID = st.integers(-5, 40) | st.sampled_from(["stream 7", "GPU 0", "rank \u00e9", "7"])


@st.composite
def _event(draw) -> dict:
    kind = draw(st.sampled_from(["kernel", "nccl", "copy", "cpu_op", "step", "python", "runtime", "annotation", "meta",
                                 "memory", "flow"]))
    ts = draw(st.floats(0, 1e6, allow_nan=False) | st.integers(0, 10**6) | _DECIMAL.map(float).filter(math.isfinite))
    dur = draw(st.none() | st.floats(0, 1e4) | st.integers(0, 10**4))
    ev: dict = {"ph": "X", "pid": draw(_ID), "tid": draw(_ID), "ts": ts}
    if dur is not None:
        ev["dur"] = dur
    args: dict = {"noise": draw(st.none() | st.lists(st.integers(), max_size=3) | st.dictionaries(_TEXT, _TEXT, max_size=2))}
    if draw(st.booleans()):
        args["External id"] = draw(st.integers(0, 20))
    if draw(st.booleans()):  # launches and device events share a correlation (HTA's last-step selection)
        args["correlation"] = draw(st.integers(-1, 6))
    if kind in ("kernel", "nccl", "copy"):
        ev.update(cat=draw(st.sampled_from(["kernel", "Kernel"])) if kind != "copy" else "gpu_memcpy",
                  name=NCCL if kind == "nccl" else draw(st.sampled_from(["gemm", "Memcpy DtoH", "elt\u00e9\\x", "a\tb", "Event Sync"])
                                                        | _TEXT))
        if draw(st.booleans()):
            args.update(device=draw(st.integers(0, 2)), stream=draw(st.integers(-1, 30) | st.sampled_from(["7", "0x7f1"])))
        if kind == "nccl":
            args.update(COMM_ARGS)
        if kind == "copy":
            args["bytes"] = draw(st.integers(-10, 10**9))
    elif kind in ("cpu_op", "step", "python"):
        ev.update(cat={"cpu_op": "cpu_op", "step": "user_annotation", "python": "python_function"}[kind],
                  name=draw(st.sampled_from(["aten::mm", "record_param_comms", "ProfilerStep#3", "ProfilerStep#4"]) | _TEXT))
        if ev["name"] == "record_param_comms":
            args.update(COMM_ARGS)
    elif kind == "runtime":
        ev.update(cat=draw(st.sampled_from(["cuda_runtime", "mtia_runtime"])), name="cudaLaunchKernel")
        if draw(st.booleans()):
            args["stream"] = draw(st.sampled_from(["0x55d3c0a1b2c0", "3", 3]))
    elif kind == "annotation":
        ev.update(cat="gpu_user_annotation", name=draw(st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "fwd"])))
    elif kind == "meta":
        ev = {"ph": "M", "name": draw(st.sampled_from(["process_name", "thread_name"])), "pid": draw(_ID), "tid": draw(_ID)}
        args = {"name": draw(_TEXT)}
    elif kind == "memory":
        ev.update(ph=draw(st.sampled_from(["i", "I"])), cat="cpu_instant_event", name="[memory]")
        args = {"Device Type": draw(st.sampled_from([0, 1])), "Device Id": draw(st.integers(0, 2)),
                "Total Allocated": draw(st.integers(0, 10**10))}
    else:
        ev.update(ph=draw(st.sampled_from(["s", "f"])), cat="ac2g", name="ac2g", id=draw(st.integers(0, 9)))
    if draw(st.booleans()):
        ev["args"] = args
    keys = list(ev)
    draw(st.randoms(use_true_random=False)).shuffle(keys)  # any key order (cat before ph, args first, ...)
    return {k: ev[k] for k in keys}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(events=st.lists(_event(), min_size=1, max_size=25), indent=st.sampled_from([None, 1]), ascii_=st.booleans(),
       bare=st.booleans())
def test_random_documents_import_the_same_with_or_without_the_scanner(events: list, indent, ascii_: bool, bare: bool,
                                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("doc")
    doc = events if bare else {"traceEvents": events, "distributedInfo": {"rank": 0}, "traceName": "random"}
    data = json.dumps(doc, indent=indent, ensure_ascii=ascii_).encode()
    assert read_scanned(data, False) is not None  # the scanner read it: the comparison below means something
    src = tmp / "rank0.json"
    src.write_bytes(data)
    try:
        import_kineto([src], tmp / "scan.trnx")
    except UserError:  # no usable event: the other readers must say so too
        with pytest.raises(UserError):
            _import_without_scanner([src], tmp / "typed.trnx", pytest.MonkeyPatch())
        return
    _import_without_scanner([src], tmp / "typed.trnx", pytest.MonkeyPatch())
    _same_traces(tmp / "scan.trnx", tmp / "typed.trnx")


# -- refusals ------------------------------------------------------------------------
GOOD = json.dumps(rank_doc(0)).encode()
REFUSED = {
    "trailing comma": GOOD.replace(b"}]", b"},]", 1),
    "NaN": GOOD.replace(b'"ts": 100', b'"ts": NaN', 1),
    "string time": GOOD.replace(b'"ts": 100', b'"ts": "100"', 1),
    "escaped key": GOOD.replace(b'"cat"', b'"c\\u0061t"', 1),
    "escaped category": GOOD.replace(b'"cat": "kernel"', b'"cat": "kern\\u0065l"', 1),
    "float id": GOOD.replace(b'"External id": 11', b'"External id": 11.0', 1),
    "id beyond int64": GOOD.replace(b'"External id": 11', b'"External id": 123456789012345678901', 1),
    "truncated": GOOD[: len(GOOD) // 2],
    "trailing garbage": GOOD + b"x",
    "control character in a name": GOOD.replace(b"aten::mm", b"aten\x01mm", 1),
    "invalid UTF-8 in a name": GOOD.replace(b"aten::mm", b"aten\xff\xfemm", 1),
    "args not an object": GOOD.replace(b'"args": {"External id": 11}', b'"args": [11]', 1),
    "two traceEvents": b'{"traceEvents": [], "traceEvents": []}',
    "mismatched brackets": GOOD.replace(b"\"world_size\": 2}", b"\"world_size\": 2]", 1),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_the_scanner_refuses_what_it_cannot_read_exactly(what: str, tmp_path: Path) -> None:
    data = REFUSED[what]
    assert data != GOOD
    assert read_scanned(data, False) is None


def test_a_refused_file_still_imports(tmp_path: Path) -> None:
    src = tmp_path / "rank0.json"
    src.write_bytes(REFUSED["string time"])
    report = import_kineto([src], tmp_path / "out.trnx")
    assert report.rows["kernels"] == 3


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(MUTATION, min_size=1, max_size=6), gz=st.booleans())
def test_any_bytes_are_read_in_bounds_or_refused(ops: list, gz: bool) -> None:
    data = mutate(gzip.compress(GOOD) if gz else GOOD, ops)
    found = S.scan(data, [True] * len(CATEGORIES))
    if found is None:
        return
    ints, floats, header, total = found
    n = len(data)
    assert len(ints) <= total
    for s_col, e_col in ((S.NAME_S, S.NAME_E), (S.ARGS_S, S.ARGS_E)):
        has = ints[:, s_col] >= 0
        assert ((ints[has, s_col] <= ints[has, e_col]) & (ints[has, e_col] <= n)).all()
    for k_col, v_col, e_col in ((S.PID_K, S.PID_V, S.PID_E), (S.TID_K, S.TID_V, S.TID_E)):
        text = ints[:, k_col] == 2
        assert ((ints[text, v_col] >= 0) & (ints[text, v_col] <= ints[text, e_col]) & (ints[text, e_col] <= n)).all()
    got = header[header[:, 0] >= 0]
    assert ((got[:, 0] < got[:, 1]) & (got[:, 1] <= n)).all()


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(MUTATION, min_size=1, max_size=5))
def test_damaged_files_through_the_scanner_import_or_fail_in_one_sentence(ops: list) -> None:
    """tests/robustness's byte mutations, with the scanner reading first (it refuses, or its
    columns make a valid trace)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "rank0.json"
        src.write_bytes(mutate(GOOD, ops))
        import_or_one_sentence([src], Path(d) / "out.trnx")


def test_a_big_file_grows_the_arrays() -> None:
    """More events than the first guess (one per 512 bytes) still come out, in order."""
    rng = random.Random(0)
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": i, "dur": rng.random()} for i in range(5000)]
    data = json.dumps({"traceEvents": events}, separators=(",", ":")).encode()
    ints, floats, _, total = S.scan(data, [True] * len(CATEGORIES))
    assert total == len(ints) == 5000 and len(data) // 512 + 64 < 5000
    assert floats[:, S.TS].tolist() == list(range(5000))
