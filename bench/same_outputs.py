"""Are the analyses' outputs unchanged, bit for bit? Save them once, compare after a change.

Runs `trnx summary --json` on each trace, `trnx diff --json` on each neighbouring pair,
and `trnx export` of the chrome-json timeline of the bundled samples, and writes the
outputs to a directory (`--save DIR`) or compares them byte for byte with a saved one
(`--against DIR`). Speed work promises identical outputs where the computation is the
same (issue 16); this is how that promise is checked, on the samples and on the big
captures of bench/out/.

    .venv/bin/python bench/same_outputs.py --save bench/out/outputs-before [TRACE ...]
    ... change the code ...
    .venv/bin/python bench/same_outputs.py --against bench/out/outputs-before [TRACE ...]

Without TRACE arguments: the bundled samples. `--code DIR` runs trnx from another
source tree (say a `git worktree add --detach DIR main`), so "before" can be saved
from main at any time: `--save bench/out/main-outputs --code DIR`.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "sample_traces").glob("*.trnx"))


CODE = ROOT  # the source tree trnx runs from (`python -m` puts the working directory first on sys.path)


def trnx(*args: str) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, cwd=CODE)
    if proc.returncode != 0:
        raise SystemExit(f"trnx {' '.join(args)} failed: {proc.stderr.decode().strip()}")
    return proc.stdout


def outputs(traces: list[Path], out: Path) -> list[Path]:
    """Write every output of `traces` under `out`; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for t in traces:
        f = out / f"summary-{t.stem}.json"
        f.write_bytes(trnx("summary", str(t), "--json"))
        written.append(f)
    for a, b in zip(traces, traces[1:]):
        f = out / f"diff-{a.stem}-{b.stem}.json"
        f.write_bytes(trnx("diff", str(a), str(b), "--json"))
        written.append(f)
    for t in traces:
        if t.parent.name == "sample_traces":
            f = out / f"export-{t.stem}.json"
            f.unlink(missing_ok=True)
            trnx("export", str(t), "--format", "chrome-json", "-o", str(f.resolve()))
            written.append(f)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, help="write the outputs here")
    mode.add_argument("--against", type=Path, help="compare with the outputs saved here")
    ap.add_argument("--code", type=Path, default=ROOT, help="run trnx from this source tree (default: this one)")
    ap.add_argument("traces", nargs="*", type=Path)
    args = ap.parse_args()
    global CODE
    CODE = args.code.resolve()
    traces = [t.resolve() for t in args.traces] or SAMPLES
    if args.save:
        for f in outputs(traces, args.save):
            print(f"saved {f}")
        return
    now = args.against.parent / (args.against.name + "-now")
    differ = []
    for f in outputs(traces, now):
        ref = args.against / f.name
        same = ref.exists() and filecmp.cmp(ref, f, shallow=False)
        print(f"{'same' if same else 'DIFFERS'}  {f.name}")
        if not same:
            differ.append(f.name)
    if differ:
        raise SystemExit(f"{len(differ)} outputs differ from {args.against}")
    print(f"all {len(traces)} traces' outputs identical to {args.against}")


if __name__ == "__main__":
    main()
