"""The GUI thread's own CPU per pass of the event loop after each navigation, on a big trace.

    QT_QPA_PLATFORM=offscreen python bench/gui_passes.py TRACE [--root DIR]

Opens TRACE in the real window (1920x1080), waits for the analysis panels, then selects the
first instruction and follows five deep links (two kernels, two instructions, one more kernel)
the way `bench/tools_gui.py` does (with `--deep`, three more: to instructions hundreds of rows
down their kernels). After each, it runs the event loop one pass at a time for
1.5 s (`--window`) and reports the GUI thread's CPU time (`time.thread_time`) of the synchronous call plus
the first pass, of the worst pass, of the worst pass after the first (the first repaints the
timeline at the new place; the later ones are the panels following it), and of all of them. A pass is what a user waits through
before the window answers again, and its CPU time hardly depends on what else the machine
runs, where `tools_gui.py`'s wall-clock gaps, on a shared 2-core machine, are mostly the load.
`--root` runs another checkout's `explorer` (the same bench on the code before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout whose explorer package runs (default: this one)")
    ap.add_argument("--deep", action="store_true",
                    help="also follow links to instructions 300 and 900 rows down three kernels of over 3,000 events "
                         "(the operator tree expands to them)")
    ap.add_argument("--window", type=float, default=1.5,
                    help="seconds of passes measured after each action (longer on a loaded machine, where the "
                         "workers' answers come late)")
    args = ap.parse_args()
    from gui_window import open_analysed

    app, w, spin = open_analysed(args.trace, args.root, settle=3)
    index = w.view.index
    ins = index.tables["instructions"]
    first = index.find_id(int(ins.value("id", 0)))
    actions = [("select the first instruction", lambda: w.view.select(first))]
    for link in ("kernel:824", f"instruction:{int(ins.value('id', ins.n // 2))}", "kernel:500",
                 f"instruction:{int(ins.value('id', ins.n // 3))}", "kernel:1200"):
        actions.append((f"deep link {link}", lambda link=link: w.tools.go_to_link(link)))
    if args.deep:
        actions += [(f"deep link {link}", lambda link=link: w.tools.go_to_link(link)) for link in _deep_links(w)]
    rows = []
    for name, act in actions:
        spin(max(2.0, args.window))  # the previous action's trailing work done
        c = time.thread_time()
        act()
        sync = (time.thread_time() - c) * 1e3
        passes = []
        t = time.perf_counter()
        while time.perf_counter() - t < args.window:
            c = time.thread_time()
            app.processEvents()
            passes.append((time.thread_time() - c) * 1e3)
            time.sleep(0.002)
        rows.append({"action": name, "call_and_first_pass_ms": round(sync + passes[0], 1),
                     "worst_pass_ms": round(max(passes), 1),
                     # the first pass repaints the timeline at the new place; what the panels do after it:
                     "worst_later_pass_ms": round(max(passes[1:], default=0.0), 1),
                     "all_passes_ms": round(sync + sum(passes), 1)})
        print(json.dumps(rows[-1]), flush=True)
    w.close()
    print(json.dumps({"trace": str(args.trace), "root": str(args.root), "load_1min": os.getloadavg()[0], "actions": rows}))


def _deep_links(w) -> list[str]:
    """Links to an instruction 900 rows down a kernel, 300 down the next, 900 down a third (kernels of
    over 3,000 events from the middle of the trace): the tree lays out every row before the one shown."""
    h = w.analysis.session.analysis.hierarchy
    k = h.kernels
    big = k[(k["instruction_count"] + k["dma_count"]) > 3000]["kernel_id"].tolist()
    links = []
    for kernel, down in zip(big[len(big) // 2:], (900, 300, 900)):
        nodes = h.children(f"kernel:{kernel}")["node"].tolist()
        links.append(next(n for n in nodes[down:] if n.startswith("instruction:")))
    return links


if __name__ == "__main__":
    main()
