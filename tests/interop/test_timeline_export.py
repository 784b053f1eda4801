"""Chrome JSON and Perfetto exports load back: event counts, names, timestamps, filters."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from interop.kineto_samples import write_ranks
from simcore.errors import UserError
from simcore.trace import open_trace
from tracegen import write_tiny
from explorer.export import FORMATS
from explorer.model.scope import Scope, parse_range
from explorer.interop import import_kineto


@pytest.fixture()
def tiny(tmp_path: Path):
    return open_trace(write_tiny(tmp_path / "tiny.trnx"))


@pytest.fixture()
def ranks(tmp_path: Path):
    out = tmp_path / "ranks.trnx"
    import_kineto(write_ranks(tmp_path), out)
    return open_trace(out)


def _scope(chips=None, cores=None, range=None) -> dict:
    """Exporter options: the `Scope` that `trnx export --chips --cores --range` parse to."""
    t0, t1 = range if isinstance(range, tuple) else parse_range(range)
    return {"scope": Scope(t0, t1, None if chips is None else tuple(chips), None if cores is None else tuple(cores))}


def _chrome(trace, path: Path, **options) -> list[dict]:
    FORMATS["chrome-json"](trace, path, _scope(**options))
    doc = json.loads(path.read_text())
    assert doc["displayTimeUnit"] == "ns"
    return doc["traceEvents"]


def _perfetto(trace, path: Path, **options) -> list:
    FORMATS["perfetto"](trace, path, _scope(**options))
    t = pb.Trace()
    t.ParseFromString(path.read_bytes())
    return list(t.packet)


def _expected_slices(trace) -> list[tuple[str, int, int, int]]:
    """(name, track, start_ns, end_ns) of every slice the timeline exports should hold."""
    out = []
    for tbl, col in (("instructions", "opcode"), ("kernels", "name")):
        df = trace.to_pandas(tbl)
        out += [(str(n), int(t), int(s), int(s + d)) for n, t, s, d in zip(df[col], df.track_id, df.start_ns, df.dur_ns)]
    df = trace.to_pandas("dma")
    out += [(f"{a}->{b}", int(t), int(s), int(s + d)) for a, b, t, s, d in zip(df.src, df.dst, df.track_id, df.start_ns, df.dur_ns)]
    df = trace.to_pandas("collectives")
    for k, t, a, s, e in zip(df.kind, df.track_id, df.arrive_ns, df.start_ns, df.end_ns):
        out.append((str(k), int(t), int(s), int(e)))
        if s > a:
            out.append((f"{k} wait", int(t), int(a), int(s)))
    return sorted(out)


def _chrome_slices(events: list[dict]) -> list[tuple[str, int, int, int]]:
    xs = [e for e in events if e["ph"] == "X"]
    return sorted((e["name"], e["tid"], round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in xs)


def _perfetto_slices(packets: list) -> list[tuple[str, int, int, int]]:
    names: dict[int, str] = {}
    for p in packets:
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
    open_: dict[int, list[tuple[str, int]]] = {}
    out = []
    for p in packets:
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_.setdefault(e.track_uuid, []).append((names[e.name_iid], p.timestamp))
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            name, start = open_[e.track_uuid].pop()
            out.append((name, e.track_uuid - 1, start, p.timestamp))
    assert not any(open_.values())
    return sorted(out)


@pytest.mark.parametrize("which", ["tiny", "ranks"])
def test_chrome_json_round_trip(which: str, request, tmp_path: Path) -> None:
    trace = request.getfixturevalue(which)
    events = _chrome(trace, tmp_path / "t.json")
    assert _chrome_slices(events) == _expected_slices(trace)
    counters = [e for e in events if e["ph"] == "C"]
    c = trace.to_pandas("counters")
    assert sorted((round(e["ts"] * 1000), e["args"]["value"]) for e in counters) == sorted(zip(c.time_ns, c.value))
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert len(names) == trace.tracks.num_rows


def test_chrome_json_flows_join_their_events(tiny, tmp_path: Path) -> None:
    events = _chrome(tiny, tmp_path / "t.json")
    s = [e for e in events if e["ph"] == "s"]
    f = [e for e in events if e["ph"] == "f"]
    assert len(s) == len(f) == 1 and s[0]["id"] == f[0]["id"]
    # flow: DMA 100 (track 2, starts at 0) -> instruction 0 (track 0, starts at 0)
    assert (s[0]["tid"], s[0]["ts"], f[0]["tid"], f[0]["ts"], f[0]["bp"]) == (2, 0, 0, 0, "e")


@pytest.mark.parametrize("which", ["tiny", "ranks"])
def test_perfetto_round_trip(which: str, request, tmp_path: Path) -> None:
    trace = request.getfixturevalue(which)
    packets = _perfetto(trace, tmp_path / "t.pftrace")
    assert _perfetto_slices(packets) == _expected_slices(trace)
    tracks = [p.track_descriptor for p in packets if p.HasField("track_descriptor")]
    procs = [d for d in tracks if d.HasField("process")]
    assert len(procs) == len(set(trace.tracks.column("chip").to_pylist()))
    assert len(tracks) - len(procs) == trace.tracks.num_rows
    counters = [p for p in packets if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_COUNTER]
    c = trace.to_pandas("counters")
    assert sorted((p.timestamp, p.track_event.double_counter_value) for p in counters) == sorted(zip(c.time_ns, c.value))
    # every event packet is on the interning sequence the first packet cleared
    assert packets[0].sequence_flags == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    assert all(p.trusted_packet_sequence_id == 1 for p in packets if p.HasField("track_event"))


def test_perfetto_flows(tiny, tmp_path: Path) -> None:
    packets = _perfetto(tiny, tmp_path / "t.pftrace")
    begins = [p.track_event for p in packets if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN]
    out = [e for e in begins if e.flow_ids]
    end = [e for e in begins if e.terminating_flow_ids]
    assert len(out) == len(end) == 1
    assert list(out[0].flow_ids) == list(end[0].terminating_flow_ids)
    assert (out[0].track_uuid, end[0].track_uuid) == (3, 1)  # DMA queue -> TensorMatrix


def test_perfetto_varints_survive_large_values(tmp_path: Path) -> None:
    from explorer.export.perfetto import encode_counters, encode_slices

    big = np.array([0, 127, 128, 2**35, 2**62], dtype=np.int64)
    data = encode_slices(np.array([1, 2**40, 300, 5, 7]), big, np.array([1, 1, 1, 1, 1]), np.array([1, 128, 2**20, 3, 2**33]))
    data += encode_counters(np.array([9, 10]), np.array([5, 2**50]), np.array([1.5, -2e300]))
    t = pb.Trace()
    t.ParseFromString(data)
    begins = [p for p in t.packet if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN]
    assert [p.timestamp for p in begins] == big.tolist()
    assert [p.track_event.track_uuid for p in begins] == [1, 2**40, 300, 5, 7]
    assert [p.track_event.name_iid for p in begins] == [1, 128, 2**20, 3, 2**33]
    assert [p.track_event.double_counter_value for p in t.packet[-2:]] == [1.5, -2e300]


def test_filters_chips_cores_and_range(ranks, tmp_path: Path) -> None:
    events = _chrome(ranks, tmp_path / "r1.json", chips=[1])
    assert {e["pid"] for e in events} == {1}
    assert len(_chrome_slices(events)) == sum(1 for s in _expected_slices(ranks) if s[1] >= 4)  # rank 1's tracks are 4..6
    # 100..120 us from the start: only rank 0's second gemm (110..210 us), as kernel and as instruction
    events = _chrome(ranks, tmp_path / "win.json", range=(100_000, 120_000))
    kept = _chrome_slices(events)
    assert [s[1:] for s in kept] == [(0, 110_000, 210_000)] * 2
    assert kept == [s for s in _expected_slices(ranks) if s[2] < 120_000 and s[3] > 100_000]
    packets = _perfetto(ranks, tmp_path / "win.pftrace", range="100us:120us")
    assert _perfetto_slices(packets) == kept
    events = _chrome(ranks, tmp_path / "core.json", cores=[0])
    assert len(_chrome_slices(events)) == len(_expected_slices(ranks))  # every row is core 0 or chip-level
    with pytest.raises(UserError, match="chip 7 is not in this trace"):
        _chrome(ranks, tmp_path / "x.json", chips=[7])
    with pytest.raises(UserError, match="ends before it starts"):
        _chrome(ranks, tmp_path / "x.json", range="5ms:1ms")


def test_cli_export_timeline_formats(tmp_path: Path) -> None:
    trace = write_tiny(tmp_path / "tiny.trnx")

    def trnx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True, timeout=120)

    r = trnx("export", str(trace), "--format", "chrome-json", "-o", str(tmp_path / "t.json"), "--range", "0:150", "--cores", "0")
    assert r.returncode == 0, r.stderr
    kinds = Counter(e["ph"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"])
    assert kinds["X"] == 2 + 1 + 1 + 1  # instructions at 0, 100 and at 50 (150 is out), one DMA, the kernel
    r = trnx("export", str(trace), "--format", "perfetto", "-o", str(tmp_path / "t.pftrace"))
    assert r.returncode == 0, r.stderr
    r = trnx("export", str(trace), "--format", "perfetto", "-o", str(tmp_path / "x.pftrace"), "--range", "abc")
    assert r.returncode == 2 and r.stderr.startswith("trnx: error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "x.pftrace").exists()


def test_negative_times_keep_their_decimals(tmp_path: Path) -> None:
    """Starts before zero (a writer may rebase differently) still give exact microseconds."""
    from simcore.trace import write_trace

    tracks = {"track_id": np.array([0], dtype=np.int32), "chip": np.array([0], dtype=np.int32),
              "core": np.array([0], dtype=np.int32), "kind": ["vector"], "name": ["Vector"], "unit": [""]}
    instr = {"id": np.arange(2), "track_id": np.zeros(2, dtype=np.int32), "start_ns": np.array([-1500, 7]),
             "dur_ns": np.array([1, 1001]), "opcode": "Copy", "kernel_id": -1, "flops": 0, "bytes": 0, "dtype": "bf16"}
    t = open_trace(write_trace(tmp_path / "neg.trnx", {"tracks": tracks, "instructions": instr}))
    xs = [e for e in _chrome(t, tmp_path / "n.json") if e["ph"] == "X"]
    assert sorted((e["ts"], e["dur"]) for e in xs) == [(-1.5, 0.001), (0.007, 1.001)]
    assert _perfetto_slices(_perfetto(t, tmp_path / "n.pftrace"))[1][2:] == (7, 1008)
