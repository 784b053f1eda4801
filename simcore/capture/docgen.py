"""Generate the capture-option table of docs/simulator.md from the declarations
(simcore/capture/options.py), so the doc cannot drift from the options.

    python -m simcore.capture.docgen            # rewrite the block in docs/simulator.md
    python -m simcore.capture.docgen --check    # exit 1 if the block is not what the options say
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simcore.capture.options import GROUP_TITLES, OPTIONS, Option
from simcore.docfile import write_or_check

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"
BEGIN = "<!-- BEGIN GENERATED OPTIONS (python -m simcore.capture.docgen) -->"
END = "<!-- END GENERATED OPTIONS -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")


def _flags(opt: Option) -> str:
    value = {"int": " N", "float": " X", "text": " TEXT", "repeated": " TEXT", "flag": "", "switch": ""}.get(opt.kind)
    if opt.kind == "choice":
        value = " " + "\\|".join(opt.choices or ())
    flag = f"{opt.flag}/--no-{opt.flag[2:]}" if opt.kind == "switch" else opt.flag
    short = f"`{opt.short}`, " if opt.short else ""
    return f"{short}`{flag}{value}`"


def options_markdown() -> str:
    """The block between BEGIN and END: one table per group, in declaration order."""
    out = [BEGIN, ""]
    for group, title in GROUP_TITLES.items():
        opts = [o for o in OPTIONS.values() if o.group == group]
        if not opts:
            continue
        out += [f"**{title}**", "", "| option | Python | what | default |", "|---|---|---|---|"]
        out += [f"| {_flags(o)} | `{o.name}` | {_cell(o.help)} | {_cell(o.shown_default or '')} |" for o in opts]
        out.append("")
    out.append(END)
    return "\n".join(out)


def replaced(text: str) -> str:
    """`text` (the doc) with its generated block rewritten."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + options_markdown() + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simcore.capture.docgen", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the doc is out of date instead of writing it")
    ap.add_argument("--output", type=Path, default=DOC)
    args = ap.parse_args(argv)
    text = args.output.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{args.output} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    return write_or_check(args.output, replaced(text), args.check, "python -m simcore.capture.docgen")


if __name__ == "__main__":
    sys.exit(main())
