"""The packaged desktop app (PyInstaller, packaging/) and starting the window where there is no display.

The build test is slow (about 1.5 minutes on 2 cores) and needs the `package` extra
(`pip install -e '.[package]'`); without PyInstaller it is skipped with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.cli.commands.view import check_display
from simcore.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "llama3.1-8b-decode.trnx"
NO_DISPLAY = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
NO_DISPLAY_SENTENCE = ("cannot open a window: no display (DISPLAY and WAYLAND_DISPLAY are not set); "
                       "set QT_QPA_PLATFORM=offscreen to run --smoke-test without a display.")


# -- no display: one sentence and exit 2 instead of Qt's abort (exit 134, core dump) ----------
@pytest.mark.parametrize("env, says", [
    ({}, "no display (DISPLAY and WAYLAND_DISPLAY are not set)"),
    ({"QT_QPA_PLATFORM": "xcb"}, "QT_QPA_PLATFORM=xcb needs DISPLAY"),
    ({"QT_QPA_PLATFORM": "wayland", "DISPLAY": ":0"}, "QT_QPA_PLATFORM=wayland needs WAYLAND_DISPLAY"),
])
def test_check_display_refuses_linux_without_a_display(env, says):
    with pytest.raises(UserError, match="QT_QPA_PLATFORM=offscreen") as err:
        check_display(env, "linux")
    assert says in str(err.value)


@pytest.mark.parametrize("env, platform", [
    ({"DISPLAY": ":0"}, "linux"), ({"WAYLAND_DISPLAY": "wayland-0"}, "linux"),
    ({"QT_QPA_PLATFORM": "offscreen"}, "linux"), ({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":1"}, "linux"),
    ({}, "darwin"), ({}, "win32"),
])
def test_check_display_lets_a_usable_platform_through(env, platform):
    check_display(env, platform)


@pytest.mark.parametrize("argv, prefix", [
    (["-m", "explorer.cli.main", "view", str(SAMPLE)], "trnx: error: "),
    (["-m", "explorer.cli.main", "view", str(SAMPLE), "--smoke-test"], "trnx: error: "),
    (["-m", "explorer", str(SAMPLE), "--smoke-test"], "trn3-explorer: error: "),
])
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the no-display case is a Linux one")
def test_view_without_a_display_exits_2_with_one_sentence(argv, prefix):
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=NO_DISPLAY, timeout=60, cwd=ROOT)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip() == prefix + NO_DISPLAY_SENTENCE


def test_python_m_explorer_refuses_bad_arguments_in_one_line(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    for argv, says in ((["--frobnicate"], "unknown option --frobnicate; see --help."),
                       (["a.trnx", "b.trnx"], "give one trace at most (got 2: a.trnx b.trnx)."),
                       ([str(tmp_path / "nope.trnx")], f"{tmp_path / 'nope.trnx'} does not exist.")):
        r = subprocess.run([sys.executable, "-m", "explorer", *argv], capture_output=True, text=True, env=env, timeout=60)
        assert (r.returncode, r.stderr.strip()) == (2, f"trn3-explorer: error: {says}")
    r = subprocess.run([sys.executable, "-m", "explorer", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("trn3-explorer ")


def test_build_script_without_pyinstaller_says_how_to_get_it():
    code = ("import sys, runpy; sys.modules['PyInstaller'] = None; sys.argv = ['build.py']; "
            "sys.exit(runpy.run_path('packaging/build.py', run_name='__main__'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "build.py: error: PyInstaller is not installed; run pip install -e '.[package]'."


# -- the packaged app --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> Path:
    pytest.importorskip("PyInstaller", reason="PyInstaller is not installed (pip install -e '.[package]')")
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import build as packaging_build
    finally:
        sys.path.pop(0)
    out = tmp_path_factory.mktemp("package")
    packaging_build.build(out / "dist", out / "work", quiet=True)
    return out / "dist" / "trn3-explorer"


def program(folder: Path, name: str) -> str:
    return str(folder / (f"{name}.exe" if sys.platform == "win32" else name))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_packaged_app_smoke_test_capture_and_no_display(packaged, tmp_path):
    offscreen = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([program(packaged, "trn3-explorer"), str(SAMPLE), "--smoke-test"], capture_output=True,
                       text=True, env=offscreen, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "first frame rendered" in r.stdout

    # the bundled trnx captures with numba compiled (and cached in the user's cache dir, not the bundle)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in offscreen.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA")}
    env.update(HOME=str(home), USERPROFILE=str(home))
    out = tmp_path / "packaged.trnx"
    r = subprocess.run([program(packaged, "trnx"), "capture", "--workload", "llama3.1-8b", "--layers", "2",
                        "--cores", "0", "-o", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ModuleNotFoundError" not in r.stderr and (out / "meta.json").is_file()
    # its checksums are BLAKE3 (format 1.5): the frozen app imports blake3 to write and to verify them
    assert '"checksum": "blake3-64MiB:' in (out / "meta.json").read_text()
    r = subprocess.run([program(packaged, "trnx"), "validate", str(out)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0 and "every table file matches its checksum" in r.stdout, r.stderr
    cached = list(home.rglob("*.nbi"))
    assert cached and all("trn3-explorer" in str(p) for p in cached), "numba did not compile into the user cache"
    r = subprocess.run([program(packaged, "trn3-explorer"), str(out), "--smoke-test"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr

    # a multi-chip capture whose two pipeline stages simulate in worker processes (forkserver
    # children re-run the frozen program: multiprocessing.freeze_support in the launchers)
    pp = tmp_path / "pp2.trnx"
    r = subprocess.run([program(packaged, "trnx"), "capture", "-H", "trn3-ultraserver-gen1", "-w", "llama3.1-8b",
                        "--pp", "2", "--layers", "4", "--workers", "2", "-o", str(pp)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "on 2 ranks (1 chip)" in r.stdout and (pp / "meta.json").is_file()

    if sys.platform.startswith("linux"):
        r = subprocess.run([program(packaged, "trn3-explorer"), str(SAMPLE)], capture_output=True, text=True,
                           env=NO_DISPLAY, timeout=120)
        assert (r.returncode, r.stderr.strip()) == (2, "trn3-explorer: error: " + NO_DISPLAY_SENTENCE)

    # on a real X server the bundled xcb plugin loads (only the libraries packaging/README.md lists come from the system)
    if sys.platform.startswith("linux") and shutil.which("xvfb-run"):
        r = subprocess.run(["xvfb-run", "-a", program(packaged, "trn3-explorer"), str(SAMPLE), "--smoke-test"],
                           capture_output=True, text=True, env={**env, "QT_QPA_PLATFORM": "xcb"}, timeout=300)
        assert r.returncode == 0, r.stderr
