"""Regenerate docs/images/tools-memory-*.png: the Memory view (docs/tools.md) on the 8B decode sample, both themes.

    .venv/bin/python docs/images/memory_screenshots.py [TRACE] [--output-dir DIR]

Offscreen at 1920x1080: the timeline zoomed on one decoder layer of the sample's core 0 and the
Memory dock under it following that window, with partitions down (`tools-memory-THEME.png`) and
with byte addresses down (`tools-memory-address-THEME.png`). Rerun it when the view's looks
change, and look at the pictures.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


from tools_screenshots import save, settle, themed_window  # noqa: E402  (this directory is the script's: on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", type=Path, default=ROOT / "sample_traces" / "llama3.1-8b-decode.trnx")
    ap.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "images")
    a = ap.parse_args()
    from PySide6.QtCore import Qt

    from explorer.ui import ensure_app

    app = ensure_app()
    for theme in ("dark", "light"):
        w = themed_window(app, a.trace, theme)
        mem = w.tools.memory
        dock = w.panels["Memory"]
        dock.raise_()
        w.resizeDocks([dock], [560], Qt.Vertical)
        settle(app, until=lambda: mem.data is not None and mem.data.reason is None)
        k = w.loaded.index.trace.to_pandas("kernels")
        layer = k[(k.core == 0) & k.name.str.startswith(("fused_qkv", "flash_decode", "fused_mlp", "matmul"))]
        lo = int(layer.start_ns.iloc[len(layer) // 2])
        hi = lo + 150_000
        w.zoom_to(lo, hi)
        for mode, name in (("Partitions", "tools-memory"), ("Address", "tools-memory-address")):
            mem.axis.setCurrentText(mode)
            settle(app, until=lambda: mem.drawn is not None and mem.drawn[2] == mode.lower()
                   and abs(mem.drawn[0] - w.view.viewport.t0) < 1)
            save(app, w, a.output_dir / f"{name}-{theme}.png")
        w.close()
    print("wrote", ", ".join(f"{n}-{t}.png" for n in ("tools-memory", "tools-memory-address") for t in ("dark", "light")))


if __name__ == "__main__":
    main()
