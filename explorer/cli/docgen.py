"""Write docs/cli.md from the click commands themselves, so the reference cannot drift.

    python -m explorer.cli.docgen            # rewrite docs/cli.md
    python -m explorer.cli.docgen --check    # exit 1 if docs/cli.md is not what the commands say

Every command of `trnx` (explorer.cli.main.COMMANDS), its usage line, every option as
`--help` prints it (flags, value type, default, required) and examples: the command's
own `Examples:` block when its help has one, else the examples below.
tests/test_docs_cli.py regenerates the page and compares, checks every command and
option appears in its section, and parses every example with the real commands.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import click

from explorer.cli.main import COMMANDS, cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

# Examples for commands whose --help has none (paths are the bundled sample traces).
EXAMPLES: dict[str, list[str]] = {
    "info": ["trnx info sample_traces/llama3.1-8b-decode.trnx",
             "trnx info sample_traces/gemm-4096-bf16.trnx --json"],
    "validate": ["trnx validate sample_traces/llama3.1-8b-decode.trnx",
                 "trnx validate -q run.trnx                     # silent; exit 2 and one sentence if damaged"],
    "export": ["trnx export run.trnx --table kernels --format parquet -o kernels.parquet",
               "trnx export run.trnx --table instructions --format csv --chips 0 -o instructions.csv",
               "trnx export run.trnx --format perfetto -o run.perfetto-trace   # open in ui.perfetto.dev",
               "trnx export run.trnx --format chrome-json --cores 0 --range 0:2ms -o first-2ms.json"],
    "presets": ["trnx presets", "trnx presets --json"],
    "summary": ["trnx summary sample_traces/llama3.1-8b-decode.trnx",
                "trnx summary sample_traces/gemm-4096-bf16.trnx --json --no-recommendations",
                "trnx summary run.trnx --per-chip --chips 0,1 --range 0:500us",
                "trnx summary run.trnx --chips 0 --cores 0,1 --range 1.2ms:1.5ms --json"],
    "diff": ["trnx diff sample_traces/gemm-4096-bf16.trnx sample_traces/gemm-4096-mxfp8.trnx",
             "trnx diff before.trnx after.trnx --json --top 50",
             "trnx diff bf16.trnx mxfp8.trnx --range 0:200us --chips 0   # the same window of both"],
    "import": ["trnx import rank0.json rank1.json -o run.trnx",
               "trnx import traces/*.json.gz -o run.trnx --jobs 0 --overwrite --json"],
}

INTRO = """\
`trnx` is the headless command line of Trn3 Explorer: capture a trace with the simulator,
inspect, validate, summarize, compare and export it, import PyTorch-profiler traces, and
open the desktop window. Every command answers `-h`/`--help`.

Bad input (a missing file, an unknown option value, an impossible capture) prints one
sentence, `trnx: error: ...`, on stderr and exits with status 2; Ctrl+C exits with 130, and
SIGTERM during `capture`, `import` or `export` is handled the same way (its temporaries
removed) and exits with 143.
The same checks back the Python API (docs/python-api.md) and the GUI. So does running out
of memory: the sentence says about how much the command needs for its input (e.g. `trnx
summary` 150 MiB plus 1.3x the trace; under `ulimit -v`, the address space it needs), and
hostile input (nesting thousands deep, 5,000-digit numbers, gzip bombs, ids far outside the
trace) is refused the same way, never with a traceback (docs/trace-format.md, docs/interop.md).

Files: a command never removes or replaces what trnx did not write. `--overwrite` replaces
only a trace trnx wrote (its meta.json says `"format": "trnx-trace"` and it holds nothing but
its tables and the tool's own cache); a file, a symlink, another directory or a trace holding
anything else (your notes) is refused with one sentence and left as it was. Every output is
written to a hidden temporary beside it and renamed into place when complete, with a rename
that never replaces what appeared at the path meanwhile: of two commands writing one path,
one wins and the other fails with one sentence. Nothing is ever written inside a trace
directory (`trnx export -o run.trnx/x.csv` is refused), and `trnx export`, `trnx query -o` and
`trnx view --screenshot` replace an existing file only with `--overwrite`. Hidden temporaries a killed process left (`.NAME.trnx-tmp-*`)
are removed by the next write into that directory. The rules in full are in
docs/trace-format.md, "File safety"."""


def _command(name: str) -> click.Command:
    with click.Context(cli) as ctx:
        cmd = cli.get_command(ctx, name)
    assert cmd is not None, name
    return cmd


def is_example(line: str) -> bool:
    """A command line: `trnx ...`, possibly after VAR=value environment settings."""
    words = line.split()
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]
    return bool(words) and words[0] == "trnx"


def _help_blocks(text: str) -> tuple[list[str], list[tuple[str, list[str]]], list[list[str]]]:
    """Split click help into prose paragraphs, titled example blocks and other preformatted blocks."""
    prose: list[str] = []
    examples: list[tuple[str, list[str]]] = []
    blocks: list[list[str]] = []
    for para in text.strip().split("\n\n"):
        if para.startswith("\b"):
            lines = [ln.rstrip() for ln in para.split("\n")[1:] if ln.strip()]
            if len(lines) > 1 and lines[0].endswith(":") and all(is_example(ln.strip()) for ln in lines[1:]):
                examples.append((lines[0], [ln.strip() for ln in lines[1:]]))
            else:
                blocks.append(lines)
        else:
            prose.append(" ".join(ln.strip() for ln in para.split("\n")))
    return prose, examples, blocks


def _prose(text: str) -> str:
    """Help text as Markdown: '<N>' would vanish as an HTML tag."""
    return text.replace("<", "\\<").replace(">", "\\>")


def _cell(text: str) -> str:
    return _prose(text).replace("|", "\\|").replace("\n", " ")


def _options_table(cmd: click.Command, ctx: click.Context) -> list[str]:
    rows = ["| option | what |", "|---|---|"]
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue  # arguments are listed above the table
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, help_text = record
        rows.append(f"| `{flags.replace('|', chr(92) + '|')}` | {_cell(help_text)} |")
    return rows


def _arguments(cmd: click.Command) -> list[str]:
    out = []
    for p in cmd.params:
        if isinstance(p, click.Argument):
            many = " (one or more)" if p.nargs == -1 else ""
            need = "required" if p.required else "optional"
            out.append(f"`{p.human_readable_name}`: {need}{many}")
    return out


def command_section(name: str) -> list[str]:
    cmd = _command(name)
    ctx = click.Context(cmd, info_name=name, parent=_root_context())
    prose, examples, blocks = _help_blocks(cmd.help or COMMANDS[name][1])
    lines = [f"## trnx {name}", "", COMMANDS[name][1], ""]
    lines += ["```", f"trnx {name} {' '.join(cmd.collect_usage_pieces(ctx))}", "```", ""]
    for para in prose:
        lines += [_prose(para), ""]
    for block in blocks:
        lines += ["```", *block, "```", ""]
    args = _arguments(cmd)
    if args:
        lines += ["Arguments: " + "; ".join(args) + ".", ""]
    lines += _options_table(cmd, ctx) + [""]
    if not examples and name in EXAMPLES:
        examples = [("Examples:", EXAMPLES[name])]
    for title, block in examples:
        lines += [title, "", "```bash", *block, "```", ""]
    return lines


def _root_context() -> click.Context:
    return click.Context(cli, info_name="trnx", **(cli.context_settings or {}))


def generate() -> str:
    """The whole of docs/cli.md."""
    ctx = _root_context()
    lines = ["# trnx command reference", "",
             "<!-- Generated by `python -m explorer.cli.docgen` from the click commands; do not edit by hand. "
             "tests/test_docs_cli.py fails when this page and the commands disagree. -->", "",
             INTRO, "", "```", f"trnx {' '.join(cli.collect_usage_pieces(ctx))}", "```", "",
             "| command | what |", "|---|---|"]
    lines += [f"| [`trnx {n}`](#trnx-{n}) | {_cell(COMMANDS[n][1])} |" for n in sorted(COMMANDS)]
    lines += ["", "Options of `trnx` itself:", ""] + _options_table(cli, ctx) + [""]
    for name in sorted(COMMANDS):
        lines += command_section(name)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explorer.cli.docgen", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is out of date instead of writing it")
    ap.add_argument("--output", type=Path, default=DOC, help="where to write (default docs/cli.md)")
    args = ap.parse_args(argv)
    from simcore.docfile import write_or_check

    return write_or_check(args.output, generate(), args.check, "python -m explorer.cli.docgen")


if __name__ == "__main__":
    sys.exit(main())
