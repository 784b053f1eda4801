"""Regenerate docs/images/sweep-window-dark.png and sweep-window-light.png: File > Open sweep
on a Llama 3.1 70B decode sweep.

    .venv/bin/python docs/images/sweep_screenshot.py [SWEEP_DIR] [-o DIR]

Without SWEEP_DIR it first runs the sweep docs/sweeps.md shows (tp 4..32 ranks x batch 1..128 x
bf16/fp8 on the Gen1 UltraServer, 32 configurations, about a minute on two cores) into a
temporary directory. The window is shown offscreen at 1600x1000, coloured by tp, with the
best tokens/s-per-chip configuration selected, and saved in both themes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
FIXED = {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "phase": "decode"}
GRID = ["tp=4,8,16,32", "batch=1,8,32,128", "dtype=bf16,fp8"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", nargs="?", type=Path, help="a trnx sweep directory (default: run one)")
    ap.add_argument("-o", "--output-dir", type=Path, default=ROOT / "docs" / "images")
    a = ap.parse_args()

    sweep_dir = a.sweep
    if sweep_dir is None:
        from explorer.sweep.run import run_sweep

        sweep_dir = Path(tempfile.mkdtemp(prefix="trnx-shot-sweep-")) / "sweep"
        t0 = time.perf_counter()
        run = run_sweep(sweep_dir, FIXED, GRID, workers=1)
        print(f"swept {len(run.rows)} configurations in {time.perf_counter() - t0:.0f} s into {sweep_dir}")

    from PySide6.QtCore import QSettings

    from explorer.sweep.opened import open_sweep
    from explorer.ui import ensure_app
    from explorer.ui.sweep_window import QtSweep
    from explorer.ui.themes import apply_theme

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(Path(tempfile.gettempdir()) / "trnx-shot"))
    app = ensure_app()
    for theme in ("dark", "light"):
        apply_theme(theme, app)
        w = QtSweep(open_sweep(sweep_dir))
        w.resize(1600, 1000)
        w.show()
        w.set_colour_key("tp")
        ok = w.sweep.results.query("status == 'ok'")
        if len(ok):
            w.select(int(ok.loc[ok["tokens_per_s_per_chip"].idxmax(), "config"]))
        for _ in range(30):
            app.processEvents()
            time.sleep(0.01)
        out = a.output_dir / f"sweep-window-{theme}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not w.grab().save(str(out)):
            sys.exit(f"could not write {out}")
        print(f"wrote {out}")
        w.close()


if __name__ == "__main__":
    main()
