"""The README starts with exactly two commands that work, and CI runs the second one."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_two_commands():
    text = (ROOT / "README.md").read_text()
    after_title = text.split("\n", 1)[1].lstrip()
    assert after_title.startswith("```bash"), "the two commands come first, right under the title"
    assert len(readme_commands()) == 2


def test_ci_runs_the_readme_test_command():
    assert readme_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_main_command_opens_the_explorer_on_a_bundled_trace():
    """The first command's last step, run as a user would without a display (--smoke-test)."""
    main = readme_commands()[0].split(" && ")[-1]
    argv = shlex.split(main)
    assert argv[0] == ".venv/bin/trnx" and argv[1] == "view"
    assert (ROOT / argv[2]).is_dir(), f"{argv[2]} is not a bundled trace"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", *argv[1:], "--smoke-test"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "first frame rendered" in proc.stdout + proc.stderr
