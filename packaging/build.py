"""Build the standalone desktop app (PyInstaller, one folder) and smoke-test it.

    pip install -e '.[package]'
    python packaging/build.py                 # -> packaging/dist/trn3-explorer/
    python packaging/build.py --dist /tmp/out --no-smoke-test

The folder holds two programs sharing one set of libraries: `trn3-explorer` (the
desktop app) and `trnx` (the command line). After building, the script runs the
packaged app's `--smoke-test` offscreen on a bundled sample trace and prints the build
time and the folder's size. Exit codes: 0 built (and smoke test passed), 1 build or
smoke test failed, 2 bad input (e.g. PyInstaller missing).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEC = HERE / "trn3-explorer.spec"
APP = "trn3-explorer"
SAMPLE = ROOT / "sample_traces" / "llama3.1-8b-decode.trnx"


def executable(dist: Path, name: str) -> Path:
    """Path of a packaged program inside the built folder."""
    exe = dist / APP / (f"{name}.exe" if sys.platform == "win32" else name)
    return exe


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def build(dist: Path, work: Path, quiet: bool = False) -> float:
    """Run PyInstaller on the spec; returns the build time in seconds."""
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--distpath", str(dist),
           "--workpath", str(work), str(SPEC)]
    if quiet:
        cmd[4:4] = ["--log-level", "WARN"]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - t


def smoke_test(dist: Path, trace: Path = SAMPLE) -> str:
    """Run the packaged app's --smoke-test offscreen; returns its output line."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([str(executable(dist, APP)), str(trace), "--smoke-test"], capture_output=True, text=True,
                       env=env, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"the packaged app's smoke test exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python packaging/build.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dist", type=Path, default=HERE / "dist", help="where the app folder goes (default packaging/dist)")
    ap.add_argument("--work", type=Path, default=HERE / "build", help="PyInstaller's work directory (default packaging/build)")
    ap.add_argument("--no-smoke-test", action="store_true", help="skip running the packaged app after the build")
    ap.add_argument("--quiet", action="store_true", help="only PyInstaller's warnings")
    args = ap.parse_args(argv)
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        print("build.py: error: PyInstaller is not installed; run pip install -e '.[package]'.", file=sys.stderr)
        return 2
    try:
        seconds = build(args.dist.resolve(), args.work.resolve(), args.quiet)
    except subprocess.CalledProcessError as exc:
        print(f"build.py: error: PyInstaller failed (exit {exc.returncode}); see its output above.", file=sys.stderr)
        return 1
    folder = args.dist.resolve() / APP
    print(f"built {folder} in {seconds:.0f} s, {folder_size(folder) / 2**20:.0f} MiB")
    if not args.no_smoke_test:
        try:
            print(smoke_test(args.dist.resolve()))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"build.py: error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
