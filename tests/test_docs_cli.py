"""docs/cli.md cannot drift from the commands: it is what the generator writes from them,
every command and option appears in its own section, and every example parses."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from explorer.cli import docgen
from explorer.cli.main import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "cli.md"


def sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## trnx (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def command(name: str) -> click.Command:
    return cli.get_command(click.Context(cli), name)


def examples() -> list[tuple[str, str]]:
    out = []
    for name, body in sections().items():
        for block in re.findall(r"```bash\n(.*?)```", body, re.S):
            out += [(name, line) for line in block.splitlines() if docgen.is_example(line)]
    return out


def test_docs_cli_md_is_what_the_commands_generate():
    assert DOC.read_text(encoding="utf-8") == docgen.generate(), \
        "docs/cli.md is out of date: run python -m explorer.cli.docgen"


def test_every_command_and_option_appears_in_its_section():
    secs = sections()
    assert sorted(secs) == sorted(COMMANDS)
    for name in COMMANDS:
        cmd = command(name)
        body = secs[name]
        assert f"trnx {name}" in body
        for param in cmd.params:
            if isinstance(param, click.Option):
                if param.hidden:  # an old spelling kept for scripts (summary --chip), not documented
                    continue
                for opt in param.opts + param.secondary_opts:
                    assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", body), f"{name} {opt} missing from docs/cli.md"
            else:
                assert param.human_readable_name in body, f"{name} argument {param.human_readable_name} missing"
        assert "-h, --help" in body
        assert "```bash" in body, f"trnx {name} has no example"


@pytest.mark.parametrize("name, line", examples())
def test_every_example_parses_with_the_real_command(name, line):
    words = shlex.split(line, comments=True)
    while "=" in words[0]:  # VAR=value before the command
        words = words[1:]
    assert words[:2] == ["trnx", name], line
    with command(name).make_context(name, words[2:], parent=click.Context(cli, info_name="trnx")):
        pass  # make_context raises click.UsageError on an unknown option, bad choice or missing value


def test_read_only_examples_on_the_bundled_samples_run(tmp_path):
    ran = 0
    for name, line in examples():
        if name in ("info", "summary", "diff", "validate") and "sample_traces/" in line:
            r = subprocess.run([sys.executable, "-m", "explorer.cli.main", *shlex.split(line, comments=True)[1:]],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (line, r.stderr)
            ran += 1
    assert ran >= 5


def test_check_mode_reports_a_stale_page(tmp_path):
    stale = tmp_path / "cli.md"
    stale.write_text(docgen.generate().replace("--overwrite", "--clobber"))
    assert docgen.main(["--check", "--output", str(stale)]) == 1
    assert docgen.main(["--output", str(stale)]) == 0
    assert docgen.main(["--check", "--output", str(stale)]) == 0
