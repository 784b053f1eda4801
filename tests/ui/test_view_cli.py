"""`trnx view` and `python -m explorer`: the packaging smoke test and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.slow
def test_view_smoke_test_renders_a_frame_and_exits_0(trace_path):
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--smoke-test")
    assert r.returncode == 0, r.stderr
    assert "first frame rendered" in r.stdout


@pytest.mark.slow
def test_view_timings_print_one_json_line_once_the_analyses_are_on_screen(trace_path):
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--smoke-test", "--timings")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1
    t = json.loads(lines[0])
    assert list(t) == ["open_s", "first_frame_s", "analyses_s", "peak_rss_mb"]
    assert 0 < t["open_s"] <= t["first_frame_s"] <= t["analyses_s"] < 120
    assert 50 < t["peak_rss_mb"] < 4096
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--timings")  # timings of what?
    assert r.returncode == 2 and "--smoke-test" in r.stderr


@pytest.mark.slow
def test_view_of_a_broken_trace_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.trnx"
    bad.mkdir()
    (bad / "meta.json").write_text("{not json")
    r = run("-m", "explorer.cli.main", "view", str(bad), "--smoke-test")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("trnx: error: ")
    assert "meta.json is not valid JSON" in r.stderr and "Traceback" not in r.stderr
    r = run("-m", "explorer.cli.main", "view", str(tmp_path / "missing.trnx"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_view_is_listed_and_python_m_explorer_has_help():
    r = run("-m", "explorer.cli.main", "--help")
    assert r.returncode == 0 and "view" in r.stdout
    r = run("-m", "explorer", "--help")
    assert r.returncode == 0 and "python -m explorer [TRACE" in r.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("xvfb-run") is None,
                    reason="no xvfb-run here (.ci/run installs Debian's xvfb when it can)")
def test_view_smoke_test_on_a_real_x11_server(trace_path):
    """The desktop path people use on Linux: Qt's xcb plugin on an X server (Xvfb), not offscreen.

    Fails, rather than skips, when the X server exists but Qt's xcb plugin cannot load: that
    is the missing-system-library problem packaging/README.md lists the packages for.
    """
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb"}
    r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", sys.executable, "-m", "explorer.cli.main",
                        "view", str(trace_path), "--smoke-test"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "first frame rendered" in r.stdout


def mean_luminance(png) -> float:
    """The average grey level (0..255) of a PNG, sampled on a grid."""
    from PySide6.QtGui import QImage

    image = QImage(str(png))
    assert not image.isNull()
    values = [image.pixelColor(x, y).lightness() for x in range(0, image.width(), 37) for y in range(0, image.height(), 29)]
    return sum(values) / len(values)


@pytest.mark.slow
def test_view_screenshot_saves_the_window_at_1920x1080_in_the_theme_asked_for(trace_path, tmp_path):
    from PySide6.QtGui import QImage

    for theme in ("light", "dark"):
        png = tmp_path / f"view-{theme}.png"
        r = run("-m", "explorer.cli.main", "view", str(trace_path), "--theme", theme, "--screenshot", str(png),
                "--smoke-test")
        assert r.returncode == 0, r.stderr
        assert f"wrote {png}" in r.stdout
        image = QImage(str(png))
        assert (image.width(), image.height()) == (1920, 1080)
        grey = mean_luminance(png)
        assert grey > 170 if theme == "light" else grey < 90, (theme, grey)
    assert not list(tmp_path.glob("*.tmp*")), "no temporary file is left beside the PNG"


def test_view_screenshot_path_errors_are_one_sentence_before_any_window(trace_path, tmp_path):
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--screenshot", str(tmp_path / "shot.jpg"),
            "--smoke-test")
    assert r.returncode == 2 and "ending in .png" in r.stderr and "Traceback" not in r.stderr
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--screenshot", str(tmp_path / "no" / "shot.png"),
            "--smoke-test")
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    r = run("-m", "explorer.cli.main", "view", str(trace_path), "--theme", "sepia", "--smoke-test")
    assert r.returncode == 2 and "sepia" in r.stderr


def test_interactive_screenshot_is_saved_once_the_analyses_show_and_the_window_stays(qtbot, trace_path, tmp_path):
    from PySide6.QtGui import QImage

    from explorer.ui import open_window
    from explorer.ui.screenshot import screenshot_when_ready

    w = open_window(None)
    qtbot.addWidget(w)
    png = tmp_path / "live.png"
    screenshot_when_ready(w, png)
    w.open_path(trace_path)
    qtbot.waitUntil(png.exists, timeout=30_000)
    assert w.isVisible() and w.analysis.session.analysis is not None
    assert QImage(str(png)).size().toTuple() == (1920, 1080)


def test_view_screenshot_never_replaces_a_file_it_did_not_write(qapp, trace_path, tmp_path):
    """--screenshot onto the user's file is refused in one sentence before any window, the file kept;
    --overwrite replaces a plain file only (never a symlink), and nothing is written inside a trace."""
    from clirun import one_sentence, trnx

    mine = tmp_path / "shot.png"
    mine.write_bytes(b"my own picture")
    code, out, err = trnx("view", trace_path, "--screenshot", mine, "--smoke-test")
    assert code == 2 and out == "" and "already exists" in one_sentence(err) and "--overwrite" in err
    assert mine.read_bytes() == b"my own picture"
    (tmp_path / "link.png").symlink_to(mine)
    code, _, err = trnx("view", trace_path, "--screenshot", tmp_path / "link.png", "--smoke-test", "--overwrite")
    assert code == 2 and "symbolic link" in one_sentence(err)
    code, _, err = trnx("view", trace_path, "--screenshot", trace_path / "shot.png", "--smoke-test")
    assert code == 2 and "inside the trace" in one_sentence(err) and not (trace_path / "shot.png").exists()
    code, _, err = trnx("view", trace_path, "--overwrite", "--smoke-test")
    assert code == 2 and "--screenshot" in one_sentence(err)
    code, out, err = trnx("view", trace_path, "--screenshot", mine, "--smoke-test", "--overwrite")
    assert code == 0, err
    left = sorted(p.name for p in tmp_path.iterdir() if p != trace_path)
    assert mine.read_bytes().startswith(b"\x89PNG") and left == ["link.png", "shot.png"]  # no temporary left


def test_smoke_screenshot_waits_for_the_summary_selection_column(qtbot):
    """`trnx view --screenshot --smoke-test` (the docs' multichip picture) shoots once the Summary's
    selection column is made: it is scheduled when the panels fill, and the picture showed its scope
    line or not depending on whether its debounce had fired."""
    from pathlib import Path

    from explorer.ui import open_window
    from explorer.ui.screenshot import SCREENSHOT_SIZE, wait_for_analyses

    trace = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"
    w = open_window(None)
    qtbot.addWidget(w)
    w.resize(*SCREENSHOT_SIZE)
    w.show()
    w.open_path(trace)
    wait_for_analyses(w)
    summary = w.analysis.summary
    assert not summary.selection_busy
    assert summary.scope_label.text().startswith("selection: visible range"), summary.scope_label.text()
