"""The window's analyses against `trnx summary` on the same trace, cold and warm, beside a baseline tree.

    .venv/bin/python bench/cold_analyses.py TRACE... [--baseline-tree DIR] [--repeat 2]
                                            [--states cold,warm] [--what window,summary] [--no-index]

Issue 16's goal "analyses on screen within 1.5x the CLI summary time" compares like with like:
  cold  none of the trace's files in the page cache (bench/page_cache.py evicts this trace's pages
        only, never the machine's cache), as right after `trnx capture`, which writes around the cache
  warm  every file of the trace read once just before (so the page cache holds it all)
For each trace, repeat and state, each tree in turn (the baseline first): `trnx view TRACE
--smoke-test --timings` (its analyses_s and first_frame_s) and `trnx summary TRACE --json` (wall
time of the whole command), each in a fresh process, with the load average beside it. The summary's
JSON is hashed per tree so a change that moves it shows up (`same output` in the last lines).
The window saves its index into the trace directory: run it on copies (e.g. traces captured into /tmp).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import page_cache  # noqa: E402
from private_settings import use_private_settings  # noqa: E402
from real_captures import run  # noqa: E402


def warm(trace: Path) -> None:
    """Read every file of the trace once (into the page cache)."""
    for f in page_cache.files(trace):
        with open(f, "rb", buffering=0) as fh:
            while fh.readinto(_BUF):
                pass


_BUF = bytearray(16 << 20)


def window(trace: Path, tree: Path) -> dict:
    r = run(["view", str(trace), "--smoke-test", "--timings"], tree=tree)
    return json.loads(r["stdout"].strip().splitlines()[-1])


def summary(trace: Path, tree: Path) -> dict:
    r = run(["summary", str(trace), "--json"], tree=tree)
    out = json.loads(r["stdout"])
    out.pop("trace", None)
    return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
            "digest": hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:12]}


def main() -> None:
    use_private_settings()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--baseline-tree", type=Path)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--states", default="cold,warm")
    ap.add_argument("--what", default="window,summary")
    ap.add_argument("--no-index", action="store_true",
                    help="delete the trace's saved timeline index before each window (it builds and saves it again)")
    a = ap.parse_args()
    trees = ([a.baseline_tree.resolve()] if a.baseline_tree else []) + [ROOT]
    label = {t: ("base" if t != ROOT else "this") for t in trees}
    what = a.what.split(",")
    got: dict[tuple, list] = {}
    digests: dict[Path, set] = {t: set() for t in trees}
    for trace in a.traces:
        for rep in range(a.repeat):
            for state in a.states.split(","):
                for tree in trees:
                    for w in what:
                        if state == "cold":
                            page_cache.evict(trace)
                        else:
                            warm(trace)
                        load = os.getloadavg()[0]
                        if w == "window":
                            if a.no_index:
                                (trace / "timeline-index.cache").unlink(missing_ok=True)
                            o = window(trace, tree)
                            fig = o["analyses_s"]
                            note = (f"first frame {o['first_frame_s']:.2f} s, analyses {fig:.2f} s, "
                                    f"peak RSS {o['peak_rss_mb'] / 1024:.2f} GiB")
                        else:
                            o = summary(trace, tree)
                            fig = o["wall_s"]
                            digests[tree].add(o["digest"])
                            note = f"wall {fig:.2f} s (CPU {o['cpu_s']:.2f} s), output {o['digest']}"
                        got.setdefault((trace.name, state, label[tree], w), []).append(fig)
                        print(f"{trace.name} {state} {label[tree]} {w}: {note}; load {load:.1f}", flush=True)
        for state in a.states.split(","):
            for tree in trees:
                win = got.get((trace.name, state, label[tree], "window"))
                summ = got.get((trace.name, state, label[tree], "summary"))
                if win and summ:
                    ratios = [w / s for w, s in zip(win, summ)]
                    print(f"== {trace.name} {state} {label[tree]}: analyses {', '.join(f'{x:.2f}' for x in win)} s; "
                          f"summary {', '.join(f'{x:.2f}' for x in summ)} s; ratio (run by run) "
                          f"{', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}x)",
                          flush=True)
    if len(trees) > 1 and "summary" in what:
        same = digests[trees[0]] == digests[trees[1]] and len(digests[trees[1]]) == len(a.traces)
        print(f"summary outputs: base {sorted(digests[trees[0]])}, this {sorted(digests[trees[1]])}: "
              f"{'same output' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
