"""Generated docs (the CLI reference, the capture-option table): written atomically, or
checked against what the code generates now (`--check`, what tests and CI run)."""

from __future__ import annotations

import sys
from pathlib import Path

from simcore.atomic import atomic_path


def write_or_check(path: Path, text: str, check: bool, command: str) -> int:
    """Write `text` to `path`, or with `check` compare: 1 and one line naming `command` (the
    generator to run) when the file is not `text`, else 0."""
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date; run {command}", file=sys.stderr)
            return 1
        return 0
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0
