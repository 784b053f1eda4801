"""Timeline export speed: `trnx export --format chrome-json|perfetto` beside the obvious way, same trace, same run.

Baselines (what one writes first):
  chrome-json  one dict per event from `to_pylist()` rows, then `json.dump` of the whole list;
  perfetto     one `TracePacket` message per slice begin/end and counter sample through the
               `perfetto` package's StreamingTraceProtoBuilder.
Ours stream batches: Chrome JSON rows formatted from numpy columns with pre-escaped names;
Perfetto packets wire-encoded for whole columns with numpy.

    .venv/bin/python bench/export_speed.py --instructions 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

from simcore.trace import open_trace
from explorer.export import FORMATS

sys.path.insert(0, str(Path(__file__).parent))
from synth_trace import write_synthetic_trace  # noqa: E402


def _interval_rows(trace):
    for name, col in (("instructions", "opcode"), ("kernels", "name"), ("dma", "src")):
        t = trace.table(name)
        yield from zip(t.column("track_id").to_pylist(), t.column("start_ns").to_pylist(),
                       t.column("dur_ns").to_pylist(), t.column(col).to_pylist())


def chrome_baseline(trace, out: Path) -> int:
    chip = dict(zip(trace.tracks.column("track_id").to_pylist(), trace.tracks.column("chip").to_pylist()))
    events = [{"ph": "X", "name": n, "pid": chip[tr], "tid": tr, "ts": s / 1000, "dur": d / 1000}
              for tr, s, d, n in _interval_rows(trace)]
    c = trace.counters
    events += [{"ph": "C", "name": str(tr), "pid": chip[tr], "ts": t / 1000, "args": {"value": v}}
               for tr, t, v in zip(c.column("track_id").to_pylist(), c.column("time_ns").to_pylist(), c.column("value").to_pylist())]
    with open(out, "w") as fh:
        json.dump({"traceEvents": events}, fh)
    return len(events)


def perfetto_baseline(trace, out: Path) -> int:
    n = 0
    with open(out, "wb") as fh:
        b = StreamingTraceProtoBuilder(fh)
        for tr, s, d, name in _interval_rows(trace):
            for ts, kind in ((s, pb.TrackEvent.TYPE_SLICE_BEGIN), (s + d, pb.TrackEvent.TYPE_SLICE_END)):
                p = b.create_packet()
                p.timestamp = ts
                p.trusted_packet_sequence_id = 1
                p.track_event.type = kind
                p.track_event.track_uuid = tr + 1
                if kind == pb.TrackEvent.TYPE_SLICE_BEGIN:
                    p.track_event.name = name
                b.write_packet(p)
                n += 1
        c = trace.counters
        for tr, t, v in zip(c.column("track_id").to_pylist(), c.column("time_ns").to_pylist(), c.column("value").to_pylist()):
            p = b.create_packet()
            p.timestamp = t
            p.trusted_packet_sequence_id = 1
            p.track_event.type = pb.TrackEvent.TYPE_COUNTER
            p.track_event.track_uuid = tr + 1
            p.track_event.double_counter_value = v
            b.write_packet(p)
            n += 1
    return n


def best(fn, repeat: int) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instructions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="export-bench-"))
    try:
        path = work / "t.trnx"
        write_synthetic_trace(path, a.instructions)
        trace = open_trace(path)
        rows = {n: trace.row_count(n) for n in ("instructions", "kernels", "dma", "counters", "flows")}
        print("trace rows:", ", ".join(f"{k} {v:,}" for k, v in rows.items()))
        print(f"{'format':<13}{'ours':>9}{'events':>12}{'MB':>7}{'baseline':>10}{'ratio':>7}")
        for fmt, base in (("chrome-json", chrome_baseline), ("perfetto", perfetto_baseline)):
            out = work / f"ours.{fmt}"
            t_ours, n = best(lambda: FORMATS[fmt](trace, out, {}), a.repeat)
            size = out.stat().st_size / 1e6
            t_base, _ = best(lambda: base(trace, work / f"base.{fmt}"), max(1, a.repeat - 1))
            print(f"{fmt:<13}{t_ours:>8.2f}s{n:>12,}{size:>7.0f}{t_base:>9.2f}s{t_base / t_ours:>6.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
