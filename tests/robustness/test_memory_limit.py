"""Commands under a memory limit (issue 12, "Done means"): with an address-space limit of the
program's own footprint plus 2x the trace's size, every command ends in exit 0 or in exit 2 with
one sentence saying how much memory it needs, never a traceback; and with the amount that
sentence names, it succeeds.

Each run is a real `trnx` process under `RLIMIT_AS` (what `ulimit -v` and `prlimit --as` set).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.cli.errors import DEFAULT_NEED, MEMORY_NEEDS
from simcore.errors import path_bytes

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from synth_trace import write_synthetic_trace  # noqa: E402

COMMANDS = {
    "validate": ["validate", "{t}"],
    "summary": ["summary", "{t}"],
    "diff": ["diff", "{t}", "{t}"],
    "export-chrome-json": ["export", "{t}", "--format", "chrome-json", "-o", "{out}/t.json"],
}


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return write_synthetic_trace(tmp_path_factory.mktemp("mem") / "synth.trnx", 250_000, chips=1, cores=2)


def _run(args: list[str], limit: int) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, PYTHONFAULTHANDLER="")
    return subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True,
                          preexec_fn=cap, env=env, timeout=240)


def _sentence(res: subprocess.CompletedProcess, command: str) -> int:
    """The need (bytes) an out-of-memory refusal names: exit 2, one line, no traceback."""
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-3000:]
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith(f"trnx: error: not enough memory to run trnx {command} (it needs about "), line
    number, unit = re.search(r"it needs about ([\d.,]+) (MiB|GiB) of address space", line).groups()
    return int(float(number.replace(",", "")) * (1 << (20 if unit == "MiB" else 30)))


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_under_twice_the_trace_size_a_command_succeeds_or_names_its_need(name: str, trace: Path, tmp_path: Path) -> None:
    args = [a.format(t=trace, out=tmp_path) for a in COMMANDS[name]]
    size = path_bytes(trace) * args.count(str(trace))
    need = MEMORY_NEEDS.get(args[0], DEFAULT_NEED)
    res = _run(args, need.base_as + 2 * size)  # the program's own footprint plus 2x the trace
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    if res.returncode != 0:
        assert _sentence(res, args[0]) > need.base_as + 2 * size
    # far too little: one sentence naming the need, and that need is enough
    for leftover in tmp_path.iterdir():
        leftover.unlink()
    stated = _sentence(_run(args, 260 << 20), args[0])
    expected = need.base_as + need.per_input_as * size
    assert expected <= stated < expected + (2 << 20)  # the fitted figure, rounded up to the MiB
    assert not any(tmp_path.iterdir()), "a refused export left a file behind"
    ok = _run(args, stated + (1 << 20))
    assert ok.returncode == 0, ok.stderr[-3000:]
